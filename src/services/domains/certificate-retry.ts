import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import { canRead, canWrite, type Caller } from '../../core/caller.js';
import type { RecordChecker } from './record-checker.js';
import { appError, type AppError } from '../../core/errors.js';
import type { CertificateState, CertificateStatus, StoredCertificate } from '../../providers/certificate-authority.js';
import type { DnsZone } from '../../providers/dns-zone.js';
import { ProviderError, publicDescription } from '../../providers/errors.js';
import type { Providers } from '../../providers/index.js';
import type { Db } from '../../store/db.js';
import type { CertificatesTable } from '../../store/schema.js';

export interface RetryResult {
  certificateId: string;
  status: string;
}

export interface CertificateRetryOptions {
  /** How long an attempt may hold its lease before another replica may take over. */
  leaseMs: number;
  /** How often a retry waiting for another replica's attempt looks at the row. */
  pollMs?: number;
}

type CertificateRow = Selectable<CertificatesTable>;

const PENDING: CertificateStatus = 'PENDINGVALIDATION';

/**
 * `POST /managed-certificates/{id}/retry-validation` (DESIGN §6 "Certificate retry").
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
    private readonly providers: Providers,
    private readonly checker: RecordChecker,
    private readonly options: CertificateRetryOptions,
  ) {
    this.pollMs = options.pollMs ?? 50;
  }

  async retry(caller: Caller, id: string): Promise<RetryResult> {
    const found = await this.load(id);
    // Another organization's certificate answers like a missing one (DESIGN §4).
    if (found === undefined || !canRead(caller, found.organizationId))
      throw appError('certificates:certificate:not-found');
    if (!canWrite(caller, found.organizationId)) throw appError('auth:permission:denied');
    const pending = this.inFlight.get(id);
    if (pending !== undefined) return pending;
    if (found.row.status !== PENDING) throw notPending(found.row.status);
    const attempt = this.coalesced(id, found.organizationId).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, attempt);
    return attempt;
  }

  private async load(id: string): Promise<{ row: CertificateRow; organizationId: string } | undefined> {
    const row = await this.db
      .selectFrom('certificates as c')
      .innerJoin('module_instances as mi', 'mi.id', 'c.module_instance_id')
      .innerJoin('environments as e', 'e.id', 'mi.environment_id')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .selectAll('c')
      .select('p.organization_id')
      .where('c.id', '=', id)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const { organization_id: organizationId, ...certificate } = row;
    return { row: certificate, organizationId };
  }

  /** Takes the lease and makes the attempt, or waits for the attempt that holds it. */
  private async coalesced(id: string, organizationId: string): Promise<RetryResult> {
    const deadline = Date.now() + this.options.leaseMs * 2;
    for (;;) {
      const token = randomUUID();
      const claimed = await this.db
        .updateTable('certificates')
        .set({
          validation_attempt_id: token,
          validation_attempt_expires_at: sql<Date>`now() + ${`${this.options.leaseMs} milliseconds`}::interval`,
        })
        .where('id', '=', id)
        .where('status', '=', PENDING)
        .where((eb) =>
          eb.or([eb('validation_attempt_id', 'is', null), eb('validation_attempt_expires_at', '<=', sql<Date>`now()`)]),
        )
        .returningAll()
        .executeTakeFirst();
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
  private async waitForAttempt(id: string, deadline: number): Promise<string | 'gone' | 'expired'> {
    for (;;) {
      const row = await this.db
        .selectFrom('certificates')
        .select(['status', 'validation_attempt_id', sql<boolean>`validation_attempt_expires_at <= now()`.as('expired')])
        .where('id', '=', id)
        .executeTakeFirst();
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
    const managed = await this.db
      .selectFrom('domains')
      .select('id')
      .where('certificate_id', '=', certificateId)
      .where('managed_by_service', '=', true)
      .limit(1)
      .executeTakeFirst();
    return managed === undefined ? undefined : this.providers.dnsZoneFor(organizationId, arn);
  }

  private async finish(id: string, token: string, state: CertificateState): Promise<RetryResult> {
    const updated = await this.db
      .updateTable('certificates')
      .set((eb) => ({
        status: state.status,
        issued_at: state.issuedAt,
        expires_at: state.expiresAt,
        validation_records: JSON.stringify(state.validationRecords),
        updated_at: sql<Date>`now()`,
        validation_attempt_id: null,
        validation_attempt_expires_at: null,
        validation_attempts: eb('validation_attempts', '+', 1),
        last_validation_attempt_at: sql<Date>`now()`,
      }))
      .where('id', '=', id)
      .where('validation_attempt_id', '=', token)
      .returning('status')
      .executeTakeFirst();
    if (updated !== undefined) return { certificateId: id, status: updated.status };
    // The lease ran out and another attempt took over: its outcome is the one that counts.
    const current = await this.db.selectFrom('certificates').select('status').where('id', '=', id).executeTakeFirst();
    if (current === undefined) throw appError('certificates:certificate:not-found');
    return { certificateId: id, status: current.status };
  }

  private async release(id: string, token: string): Promise<void> {
    await this.db
      .updateTable('certificates')
      .set({ validation_attempt_id: null, validation_attempt_expires_at: null })
      .where('id', '=', id)
      .where('validation_attempt_id', '=', token)
      .execute();
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
    status: row.status as CertificateStatus,
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
