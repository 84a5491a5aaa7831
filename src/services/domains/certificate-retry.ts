import { randomUUID } from 'node:crypto';
import { canRead, canWrite, type Caller } from '../../core/caller.js';
import type { RecordChecker } from './record-checker.js';
import { appError, type AppError } from '../../core/errors.js';
import type {
  CertificateState,
  CertificateStatus,
  StoredCertificate,
} from '../../providers/domains/certificate-authority.js';
import type { DnsZone } from '../../providers/domains/dns-zone.js';
import { ProviderError, publicDescription } from '../../providers/errors.js';
import type { Providers } from '../../providers/index.js';
import type { Db } from '../../store/db.js';
import {
  type CertificateRow,
  certificateStatus,
  claimValidationLease,
  findCertificate,
  finishValidationAttempt,
  releaseValidationLease,
  validationLease,
} from '../../store/domains/certificates.js';
import { certificateServesManagedDomain } from '../../store/domains/domains.js';
import type { Tenancy } from '../../store/tenancy.js';
import type { RetryResult } from '../../core/schemas/domains.js';

export interface CertificateRetryOptions {
  /** How long an attempt may hold its lease before another replica may take over. */
  leaseMs: number;
  /** How often a retry waiting for another replica's attempt looks at the row. */
  pollMs?: number;
}

const PENDING: CertificateStatus = 'PENDINGVALIDATION';

/**
 * `POST /managed-certificates/{id}/retry-validation` (docs/design.md#5-certificate-retry).
 *
 * Concurrent retries of one certificate make one attempt: in a process they share one promise;
 * across replicas the attempt holds a lease on the certificate row, taken by one atomic UPDATE,
 * and the others wait for it to end and answer the status it left. The lease (not a row lock or
 * an advisory lock held in a transaction) spans the DNS and provider calls, so no connection is
 * pinned during network I/O — PGlite has a single one that every request shares.
 */
export class CertificateRetryService {
  private readonly inFlight = new Map<string, Promise<RetryResult>>();
  private readonly pollMs: number;

  constructor(
    private readonly db: Db,
    private readonly tenancy: Tenancy,
    private readonly providers: Providers,
    private readonly checker: RecordChecker,
    private readonly options: CertificateRetryOptions,
  ) {
    this.pollMs = options.pollMs ?? 50;
  }

  async retry(caller: Caller, id: string): Promise<RetryResult> {
    const organizationId = await this.tenancy.certificate(id);
    // Another organization's certificate answers like a missing one (docs/design.md#identity-tokens-and-permissions).
    if (organizationId === undefined || !canRead(caller, organizationId))
      throw appError('certificates:certificate:not-found');
    if (!canWrite(caller, organizationId)) throw appError('auth:permission:denied');
    const pending = this.inFlight.get(id);
    if (pending !== undefined) return pending;
    const row = await findCertificate(this.db, id);
    if (row === undefined) throw appError('certificates:certificate:not-found');
    if (row.status !== PENDING) throw notPending(row.status);
    const attempt = this.coalesced(id, organizationId).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, attempt);
    return attempt;
  }

  /** Takes the lease and makes the attempt, or waits for the attempt that holds it. */
  private async coalesced(id: string, organizationId: string): Promise<RetryResult> {
    const deadline = Date.now() + this.options.leaseMs * 2;
    for (;;) {
      const token = randomUUID();
      const claimed = await claimValidationLease(this.db, id, PENDING, token, this.options.leaseMs);
      if (claimed !== undefined) return this.attempt(claimed, token, organizationId);

      const holder = await this.waitForAttempt(id, deadline);
      if (holder === 'gone') throw appError('certificates:certificate:not-found');
      if (holder !== 'expired') return { certificateId: id, status: holder };
      if (Date.now() > deadline)
        throw appError('internal:server:unavailable', {
          description: 'Another validation attempt of this certificate did not end.',
        });
    }
  }

  /**
   * Waits while another attempt holds the lease. Answers the status once it has ended — or is
   * not pending at all any more — and `expired` when its holder died without ending it.
   */
  private async waitForAttempt(id: string, deadline: number): Promise<CertificateStatus | 'gone' | 'expired'> {
    for (;;) {
      const row = await validationLease(this.db, id);
      if (row === undefined) return 'gone';
      if (row.status !== PENDING || row.validation_attempt_id === null) return row.status;
      if (row.expired || Date.now() > deadline) return 'expired';
      await new Promise((resolve) => setTimeout(resolve, this.pollMs));
    }
  }

  /**
   * One attempt: read the authority's state and validation records, publish them in the zone when
   * a domain of the certificate is managed by the service, check them through DNS, ask the
   * authority to evaluate again, and store the outcome with the lease released — in one UPDATE, so
   * a failure at any step leaves the certificate as it was.
   */
  private async attempt(row: CertificateRow, token: string, organizationId: string): Promise<RetryResult> {
    try {
      const certificate = toStored(row);
      const authority = await this.providers.certificateAuthorityFor(organizationId, certificate.arn);
      const current = await authorityCall(() => authority.describe(certificate));
      const zone = await this.managedZone(row.id, organizationId, certificate.arn);
      const records = current.validationRecords;
      if (zone !== undefined) await zoneCall(() => zone.upsert(records));
      const results = await this.checker.checkAll(
        records.map((r) => ({ name: r.name, type: r.type, expected: r.value })),
        zone,
      );
      const next = await authorityCall(() =>
        authority.reevaluate(
          certificate,
          current,
          records.map((record, i) => ({ record, result: results[i]! })),
        ),
      );
      return await this.finish(row.id, token, next);
    } catch (error) {
      await this.release(row.id, token).catch(() => undefined);
      throw error;
    }
  }

  /** The zone to publish in, when any domain served by the certificate is managed by the service. */
  private async managedZone(
    certificateId: string,
    organizationId: string,
    arn: string | null,
  ): Promise<DnsZone | undefined> {
    return (await certificateServesManagedDomain(this.db, certificateId))
      ? this.providers.dnsZoneFor(organizationId, arn)
      : undefined;
  }

  private async finish(id: string, token: string, state: CertificateState): Promise<RetryResult> {
    const stored = await finishValidationAttempt(this.db, id, token, state);
    if (stored !== undefined) return { certificateId: id, status: stored };
    // The lease ran out and another attempt took over: its outcome is the one that counts.
    const current = await certificateStatus(this.db, id);
    if (current === undefined) throw appError('certificates:certificate:not-found');
    return { certificateId: id, status: current };
  }

  private async release(id: string, token: string): Promise<void> {
    await releaseValidationLease(this.db, id, token);
  }
}

function notPending(status: string): AppError {
  return appError('certificates:certificate:not-pending-validation', {
    description: `The certificate is ${status}; only a certificate in PENDINGVALIDATION can be retried.`,
    metadata: { status },
  });
}

function toStored(row: CertificateRow): StoredCertificate {
  return {
    id: row.id,
    arn: row.arn,
    domainName: row.domain_name,
    status: row.status,
    issuedAt: row.issued_at === null ? null : new Date(row.issued_at),
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    validationRecords: Array.isArray(row.validation_records) ? row.validation_records : [],
  };
}

function providerFailure(
  code: 'certificates:authority:failed' | 'certificates:dns-zone:failed',
  error: ProviderError,
): AppError {
  return appError(code, {
    description: publicDescription(error),
    internalDescription: error.message,
    metadata: { provider: error.provider, ...error.details },
    cause: error,
  });
}

async function authorityCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ProviderError) throw providerFailure('certificates:authority:failed', error);
    throw error;
  }
}

async function zoneCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ProviderError) throw providerFailure('certificates:dns-zone:failed', error);
    throw error;
  }
}
