import type {
  CertificateAuthority,
  CertificateState,
  StoredCertificate,
  ValidationCheck,
} from '../../domains/certificate-authority.js';

/** Validity of a certificate the local authority issues, like ACM's public certificates' renewal cadence. */
export const LOCAL_CERTIFICATE_VALIDITY_DAYS = 90;
const DAY_MS = 86_400_000;

/**
 * The embedded authority: certificates live in Berth's database (the service persists the
 * state this answers). A pending certificate is issued once every one of its validation records
 * resolves as expected.
 */
export class LocalCertificateAuthority implements CertificateAuthority {
  readonly provider = 'local' as const;

  constructor(private readonly now: () => Date = () => new Date()) {}

  async describe(certificate: StoredCertificate): Promise<CertificateState> {
    return {
      status: certificate.status,
      issuedAt: certificate.issuedAt,
      expiresAt: certificate.expiresAt,
      validationRecords: certificate.validationRecords,
    };
  }

  async reevaluate(
    _certificate: StoredCertificate,
    current: CertificateState,
    checks: ValidationCheck[],
  ): Promise<CertificateState> {
    if (current.status !== 'PENDINGVALIDATION') return current;
    // Nothing to validate against is never proof of control.
    if (checks.length === 0 || checks.some((c) => c.result !== 'match')) return current;
    const issuedAt = this.now();
    return {
      ...current,
      status: 'ISSUED',
      issuedAt,
      expiresAt: new Date(issuedAt.getTime() + LOCAL_CERTIFICATE_VALIDITY_DAYS * DAY_MS),
    };
  }
}
