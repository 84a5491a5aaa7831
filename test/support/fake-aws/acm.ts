// ACM (awsJson1_1, X-Amz-Target: CertificateManager.<Op>).
import { randomUUID } from 'node:crypto';
import {
  AwsError,
  FAKE_ACCOUNT_ID,
  decodeToken,
  encodeToken,
  isRecord,
  optNumber,
  optString,
  optStringList,
  shortHash,
  toEpochSeconds,
  toMs,
  type TimeInput,
} from './core.js';

export type AcmCertificateStatus =
  | 'PENDING_VALIDATION'
  | 'ISSUED'
  | 'INACTIVE'
  | 'EXPIRED'
  | 'VALIDATION_TIMED_OUT'
  | 'REVOKED'
  | 'FAILED';

export type AcmDomainValidationStatus = 'PENDING_VALIDATION' | 'SUCCESS' | 'FAILED';

export interface AcmResourceRecord {
  name: string;
  type: 'CNAME';
  value: string;
}

export interface AcmDomainValidation {
  domainName: string;
  validationDomain: string;
  validationStatus: AcmDomainValidationStatus;
  validationMethod: 'DNS' | 'EMAIL' | 'HTTP';
  /** Present for DNS validation (hidden while `recordHiddenForDescribes` > 0). */
  resourceRecord?: AcmResourceRecord;
}

export interface FakeCertificate {
  arn: string;
  domainName: string;
  subjectAlternativeNames: string[];
  status: AcmCertificateStatus;
  type: 'AMAZON_ISSUED' | 'IMPORTED' | 'PRIVATE';
  keyAlgorithm: string;
  /** Epoch ms. */
  createdAt: number;
  issuedAt?: number;
  notBefore?: number;
  notAfter?: number;
  failureReason?: string;
  inUseBy: string[];
  domainValidationOptions: AcmDomainValidation[];
  /** DescribeCertificate calls still answered without ResourceRecord (ACM fills it in a few seconds after the request). */
  recordHiddenForDescribes: number;
  idempotencyToken?: string;
}

export interface CertificateInput {
  domainName: string;
  arn?: string;
  subjectAlternativeNames?: string[];
  status?: AcmCertificateStatus;
  type?: FakeCertificate['type'];
  keyAlgorithm?: string;
  createdAt?: TimeInput;
  issuedAt?: TimeInput;
  notBefore?: TimeInput;
  notAfter?: TimeInput;
  failureReason?: string;
  inUseBy?: string[];
  validationMethod?: 'DNS' | 'EMAIL';
  /** Override the generated validation records, by domain name. */
  validationRecords?: Array<{ domainName?: string; name: string; type?: 'CNAME'; value: string }>;
  recordHiddenForDescribes?: number;
}

export interface FakeAcmOptions {
  /** For certificates made by RequestCertificate: DescribeCertificate calls answered without ResourceRecord. */
  recordHiddenForDescribes: number;
}

const ARN_RE = /^arn:aws[\w-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[\w-]+$/;
const DAY = 86_400_000;

/** The CNAME ACM asks for, derived deterministically from the certificate and the name. */
export function acmValidationRecord(arn: string, domainName: string): AcmResourceRecord {
  const base = domainName.replace(/^\*\./, '').replace(/\.$/, '').toLowerCase();
  return {
    name: `_${shortHash(`name:${base}`)}.${base}.`,
    type: 'CNAME',
    value: `_${shortHash(`value:${arn}:${base}`)}.${shortHash(`zone:${arn}`, 10)}.acm-validations.aws.`,
  };
}

export class FakeAcm {
  readonly options: FakeAcmOptions;
  private readonly certs = new Map<string, FakeCertificate>();

  constructor(options: Partial<FakeAcmOptions> = {}) {
    this.options = { recordHiddenForDescribes: 0, ...options };
  }

  // -------------------------------------------------------------- state accessors

  /** Stores a certificate and returns it (a live object: mutate it to change what ACM answers). */
  addCertificate(input: CertificateInput, region = 'us-east-1'): FakeCertificate {
    const arn = input.arn ?? `arn:aws:acm:${region}:${FAKE_ACCOUNT_ID}:certificate/${randomUUID()}`;
    const status = input.status ?? 'PENDING_VALIDATION';
    const method = input.validationMethod ?? 'DNS';
    const sans = input.subjectAlternativeNames ?? [input.domainName];
    const names = [...new Set([input.domainName, ...sans])];
    const issued = status === 'ISSUED' || status === 'EXPIRED' || status === 'INACTIVE' || status === 'REVOKED';
    const validationStatus: AcmDomainValidationStatus = issued
      ? 'SUCCESS'
      : status === 'PENDING_VALIDATION'
        ? 'PENDING_VALIDATION'
        : 'FAILED';
    const createdAt = input.createdAt === undefined ? Date.now() : toMs(input.createdAt);
    const cert: FakeCertificate = {
      arn,
      domainName: input.domainName,
      subjectAlternativeNames: names,
      status,
      type: input.type ?? 'AMAZON_ISSUED',
      keyAlgorithm: input.keyAlgorithm ?? 'RSA-2048',
      createdAt,
      inUseBy: input.inUseBy ?? [],
      recordHiddenForDescribes: input.recordHiddenForDescribes ?? 0,
      domainValidationOptions: names.map((domainName): AcmDomainValidation => {
        const given =
          input.validationRecords?.find((r) => r.domainName === domainName) ??
          (input.validationRecords?.length === 1 && names.length === 1 ? input.validationRecords[0] : undefined);
        const v: AcmDomainValidation = {
          domainName,
          validationDomain: domainName,
          validationStatus,
          validationMethod: method,
        };
        if (method === 'DNS') {
          v.resourceRecord = given
            ? { name: given.name, type: given.type ?? 'CNAME', value: given.value }
            : acmValidationRecord(arn, domainName);
        }
        return v;
      }),
    };
    if (input.issuedAt !== undefined) cert.issuedAt = toMs(input.issuedAt);
    if (input.notBefore !== undefined) cert.notBefore = toMs(input.notBefore);
    if (input.notAfter !== undefined) cert.notAfter = toMs(input.notAfter);
    if (input.failureReason !== undefined) cert.failureReason = input.failureReason;
    if (issued) {
      cert.issuedAt ??= createdAt;
      cert.notBefore ??= cert.issuedAt;
      cert.notAfter ??= cert.notBefore + 395 * DAY;
    }
    this.certs.set(arn, cert);
    return cert;
  }

  get(arn: string): FakeCertificate | undefined {
    return this.certs.get(arn);
  }

  list(): FakeCertificate[] {
    return [...this.certs.values()];
  }

  /** Moves a certificate to `status`, keeping validation statuses and dates consistent (ISSUED sets issuedAt/notAfter). */
  setStatus(arn: string, status: AcmCertificateStatus, at: TimeInput = Date.now()): FakeCertificate {
    const cert = this.certs.get(arn);
    if (!cert) throw new Error(`fake-aws: no certificate ${arn}`);
    cert.status = status;
    const ms = toMs(at);
    if (status === 'ISSUED') {
      cert.issuedAt = ms;
      cert.notBefore = ms;
      cert.notAfter = ms + 395 * DAY;
      for (const v of cert.domainValidationOptions) v.validationStatus = 'SUCCESS';
    } else if (status === 'FAILED' || status === 'VALIDATION_TIMED_OUT') {
      for (const v of cert.domainValidationOptions) if (v.validationStatus !== 'SUCCESS') v.validationStatus = 'FAILED';
    } else if (status === 'PENDING_VALIDATION') {
      for (const v of cert.domainValidationOptions) v.validationStatus = 'PENDING_VALIDATION';
    }
    return cert;
  }

  // -------------------------------------------------------------- operations

  handle(op: string, input: Record<string, unknown>, region: string): unknown {
    switch (op) {
      case 'DescribeCertificate':
        return this.describeCertificate(input);
      case 'RequestCertificate':
        return this.requestCertificate(input, region);
      case 'ListCertificates':
        return this.listCertificates(input);
      default:
        throw new AwsError('UnknownOperationException', `The fake does not implement CertificateManager.${op}`);
    }
  }

  private requireCert(input: Record<string, unknown>): FakeCertificate {
    const arn = optString(input, 'CertificateArn');
    if (arn === undefined || !ARN_RE.test(arn)) {
      throw new AwsError('InvalidArnException', `String '${arn ?? ''}' is not a valid ARN.`);
    }
    const cert = this.certs.get(arn);
    if (!cert) throw new AwsError('ResourceNotFoundException', `Could not find certificate ${arn}.`);
    return cert;
  }

  private describeCertificate(input: Record<string, unknown>): unknown {
    const cert = this.requireCert(input);
    const hideRecords = cert.recordHiddenForDescribes > 0;
    if (hideRecords) cert.recordHiddenForDescribes -= 1;
    const detail: Record<string, unknown> = {
      CertificateArn: cert.arn,
      DomainName: cert.domainName,
      SubjectAlternativeNames: cert.subjectAlternativeNames,
      DomainValidationOptions: cert.domainValidationOptions.map((v) => {
        const o: Record<string, unknown> = {
          DomainName: v.domainName,
          ValidationDomain: v.validationDomain,
          ValidationStatus: v.validationStatus,
          ValidationMethod: v.validationMethod,
        };
        if (v.validationMethod === 'EMAIL') {
          o.ValidationEmails = [`admin@${v.validationDomain.replace(/^\*\./, '')}`];
        }
        if (v.resourceRecord && !hideRecords) {
          o.ResourceRecord = {
            Name: v.resourceRecord.name,
            Type: v.resourceRecord.type,
            Value: v.resourceRecord.value,
          };
        }
        return o;
      }),
      Subject: `CN=${cert.domainName}`,
      Issuer: 'Amazon',
      CreatedAt: toEpochSeconds(cert.createdAt),
      Status: cert.status,
      KeyAlgorithm: cert.keyAlgorithm,
      SignatureAlgorithm: 'SHA256WITHRSA',
      InUseBy: cert.inUseBy,
      Type: cert.type,
      KeyUsages: [],
      ExtendedKeyUsages: [],
      RenewalEligibility: cert.inUseBy.length > 0 ? 'ELIGIBLE' : 'INELIGIBLE',
      Options: { CertificateTransparencyLoggingPreference: 'ENABLED' },
    };
    if (cert.issuedAt !== undefined) {
      detail.IssuedAt = toEpochSeconds(cert.issuedAt);
      detail.Serial = shortHash(cert.arn, 32).replace(/(..)(?!$)/g, '$1:');
    }
    if (cert.notBefore !== undefined) detail.NotBefore = toEpochSeconds(cert.notBefore);
    if (cert.notAfter !== undefined) detail.NotAfter = toEpochSeconds(cert.notAfter);
    if (cert.failureReason !== undefined) detail.FailureReason = cert.failureReason;
    return { Certificate: detail };
  }

  private requestCertificate(input: Record<string, unknown>, region: string): unknown {
    const domainName = optString(input, 'DomainName');
    const method = optString(input, 'ValidationMethod') ?? 'EMAIL';
    const sans = optStringList(input, 'SubjectAlternativeNames');
    const token = optString(input, 'IdempotencyToken');
    if (domainName === undefined || domainName.length < 1 || domainName.length > 253) {
      throw new AwsError(
        'ValidationException',
        `1 validation error detected: Value at 'domainName' failed to satisfy constraint`,
      );
    }
    if (!/^(\*\.)?(([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])\.)+[A-Za-z0-9]+$/.test(domainName)) {
      throw new AwsError('InvalidDomainValidationOptionsException', `DomainName '${domainName}' is not valid.`);
    }
    if (method !== 'DNS' && method !== 'EMAIL') {
      throw new AwsError('ValidationException', `Value '${method}' at 'validationMethod' failed to satisfy constraint`);
    }
    if (token !== undefined) {
      const existing = this.list().find(
        (c) => c.idempotencyToken === token && c.domainName === domainName && Date.now() - c.createdAt < 3_600_000,
      );
      if (existing) return { CertificateArn: existing.arn };
    }
    const cert = this.addCertificate(
      {
        domainName,
        subjectAlternativeNames: sans ?? [domainName],
        status: 'PENDING_VALIDATION',
        validationMethod: method,
        keyAlgorithm: (optString(input, 'KeyAlgorithm') ?? 'RSA_2048').replace('_', '-'),
        recordHiddenForDescribes: this.options.recordHiddenForDescribes,
      },
      region,
    );
    if (token !== undefined) cert.idempotencyToken = token;
    return { CertificateArn: cert.arn };
  }

  private listCertificates(input: Record<string, unknown>): unknown {
    const statuses = optStringList(input, 'CertificateStatuses');
    const maxItems = optNumber(input, 'MaxItems') ?? 1000;
    const nextToken = optString(input, 'NextToken');
    if (!Number.isInteger(maxItems) || maxItems < 1 || maxItems > 1000) {
      throw new AwsError('ValidationException', `Value '${maxItems}' at 'maxItems' failed to satisfy constraint`);
    }
    const isOffset = (v: unknown): v is { o: number } => isRecord(v) && typeof v.o === 'number';
    const offset = nextToken === undefined ? 0 : decodeToken(nextToken, isOffset)?.o;
    if (offset === undefined) throw new AwsError('InvalidArgsException', 'The specified NextToken is invalid.');
    const all = this.list()
      .filter((c) => statuses === undefined || statuses.length === 0 || statuses.includes(c.status))
      .sort((a, b) => a.createdAt - b.createdAt || (a.arn < b.arn ? -1 : 1));
    const page = all.slice(offset, offset + maxItems);
    const out: Record<string, unknown> = {
      CertificateSummaryList: page.map((c) => {
        const s: Record<string, unknown> = {
          CertificateArn: c.arn,
          DomainName: c.domainName,
          SubjectAlternativeNameSummaries: c.subjectAlternativeNames,
          HasAdditionalSubjectAlternativeNames: false,
          Status: c.status,
          Type: c.type,
          KeyAlgorithm: c.keyAlgorithm,
          KeyUsages: [],
          ExtendedKeyUsages: [],
          InUse: c.inUseBy.length > 0,
          RenewalEligibility: c.inUseBy.length > 0 ? 'ELIGIBLE' : 'INELIGIBLE',
          CreatedAt: toEpochSeconds(c.createdAt),
        };
        if (c.issuedAt !== undefined) s.IssuedAt = toEpochSeconds(c.issuedAt);
        if (c.notBefore !== undefined) s.NotBefore = toEpochSeconds(c.notBefore);
        if (c.notAfter !== undefined) s.NotAfter = toEpochSeconds(c.notAfter);
        return s;
      }),
    };
    if (offset + maxItems < all.length) out.NextToken = encodeToken({ o: offset + maxItems });
    return out;
  }
}
