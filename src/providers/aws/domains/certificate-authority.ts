import { DescribeCertificateCommand, type ACMClient, type CertificateDetail } from '@aws-sdk/client-acm';
import { awsFailure, ProviderError } from '../../errors.js';
import type {
  CertificateAuthority,
  CertificateState,
  CertificateStatus,
  StoredCertificate,
  ValidationRecord,
} from '../../domains/certificate-authority.js';

/** ACM's `CertificateStatus` → Berth's (docs/design.md#5-certificate-retry: ACM's names without underscores). */
const ACM_STATUSES: Record<string, CertificateStatus> = {
  PENDING_VALIDATION: 'PENDINGVALIDATION',
  ISSUED: 'ISSUED',
  INACTIVE: 'INACTIVE',
  EXPIRED: 'EXPIRED',
  VALIDATION_TIMED_OUT: 'VALIDATIONTIMEDOUT',
  REVOKED: 'REVOKED',
  FAILED: 'FAILED',
};

export function mapAcmStatus(status: string | undefined): CertificateStatus | undefined {
  return status === undefined ? undefined : ACM_STATUSES[status];
}

function withoutTrailingDot(name: string): string {
  return name.replace(/\.$/, '');
}

/**
 * The DNS records of `DomainValidationOptions`, once each: ACM asks the same record for a name
 * and its wildcard, and answers none for a name until it has made one (a few seconds after the
 * request).
 */
export function acmValidationRecords(detail: CertificateDetail): ValidationRecord[] {
  const out = new Map<string, ValidationRecord>();
  for (const option of detail.DomainValidationOptions ?? []) {
    const rr = option.ResourceRecord;
    if (rr?.Name === undefined || rr.Type === undefined || rr.Value === undefined) continue;
    const record = {
      name: withoutTrailingDot(rr.Name).toLowerCase(),
      type: rr.Type,
      value: withoutTrailingDot(rr.Value),
    };
    out.set(`${record.type} ${record.name} ${record.value}`, record);
  }
  return [...out.values()];
}

/**
 * ACM through DescribeCertificate. ACM validates a pending certificate by itself, looking for
 * its records again and again for 72 hours; there is no call to make it look now, so
 * "re-evaluate" is reading its verdict.
 */
export class AcmCertificateAuthority implements CertificateAuthority {
  readonly provider = 'aws' as const;

  constructor(
    private readonly client: ACMClient,
    private readonly callTimeoutMs: number,
  ) {}

  async describe(certificate: StoredCertificate): Promise<CertificateState> {
    if (certificate.arn === null) {
      throw new ProviderError(
        'certificate-authority',
        'aws',
        'The certificate has no ACM ARN, so ACM cannot be asked about it.',
        {
          operation: 'DescribeCertificate',
        },
      );
    }
    let detail: CertificateDetail | undefined;
    try {
      const out = await this.client.send(new DescribeCertificateCommand({ CertificateArn: certificate.arn }), {
        abortSignal: AbortSignal.timeout(this.callTimeoutMs),
      });
      detail = out.Certificate;
    } catch (error) {
      throw awsFailure('certificate-authority', 'DescribeCertificate', error);
    }
    const status = mapAcmStatus(detail?.Status);
    if (detail === undefined || status === undefined) {
      throw new ProviderError(
        'certificate-authority',
        'aws',
        `ACM answered an unknown certificate status ${JSON.stringify(detail?.Status ?? null)}.`,
        {
          operation: 'DescribeCertificate',
        },
      );
    }
    const records = acmValidationRecords(detail);
    return {
      status,
      issuedAt: detail.IssuedAt ?? detail.ImportedAt ?? null,
      expiresAt: detail.NotAfter ?? null,
      // Until ACM has made the records, keep the ones known so far.
      validationRecords: records.length > 0 ? records : certificate.validationRecords,
    };
  }

  async reevaluate(_certificate: StoredCertificate, current: CertificateState): Promise<CertificateState> {
    return current;
  }
}
