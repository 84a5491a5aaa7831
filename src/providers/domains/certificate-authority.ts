import type { DnsCheckResult } from './dns-resolver.js';
import type { ValidationRecord } from '../../store/schema.js';
import type { ProviderKind } from '../errors.js';
import type { CertificateStatus } from '../../core/enums.js';

export { CERTIFICATE_STATUSES, type CertificateStatus } from '../../core/enums.js';

export type { ValidationRecord };

/** A certificate as Berth stores it. */
export interface StoredCertificate {
  id: string;
  arn: string | null;
  domainName: string;
  status: CertificateStatus;
  issuedAt: Date | null;
  expiresAt: Date | null;
  validationRecords: ValidationRecord[];
}

/** What the authority says about a certificate. */
export interface CertificateState {
  status: CertificateStatus;
  issuedAt: Date | null;
  expiresAt: Date | null;
  /** The DNS records the authority asks for to validate the certificate's names. */
  validationRecords: ValidationRecord[];
}

export interface ValidationCheck {
  record: ValidationRecord;
  result: DnsCheckResult;
}

/**
 * Issues and validates certificates (docs/design.md#providers): Berth's own database (`local`) or ACM (`aws`).
 * Errors are ProviderErrors.
 */
export interface CertificateAuthority {
  readonly provider: ProviderKind;
  /** The certificate's state as the authority sees it now, with the validation records it wants. */
  describe(certificate: StoredCertificate): Promise<CertificateState>;
  /**
   * Asks the authority to evaluate the certificate again, given how its validation records
   * resolve now; answers the state after.
   */
  reevaluate(
    certificate: StoredCertificate,
    current: CertificateState,
    checks: ValidationCheck[],
  ): Promise<CertificateState>;
}
