import { createHash } from 'node:crypto';
import type { RecordOwnership, RecordRole } from './enums.js';
import type { DomainRecord } from './schemas/domains.js';

export type { DomainRecord, RecordOwnership, RecordRole };

/** A DNS record a certificate authority asks for to prove control of a name. */
export interface ValidationRecord {
  name: string;
  type: string;
  value: string;
}

export interface DomainRecordInput {
  id: string;
  domainName: string;
  managedByService: boolean;
  targetDnsName: string | null;
  targetZoneId: string | null;
}

/** The label under which a domain's ownership TXT record lives. */
export const VERIFICATION_LABEL = '_berth-verification';

/**
 * The TXT value proving control of a domain. Derived from the domain's id and name, so it is
 * stable across restarts and replicas and needs no stored secret, and a record left behind by an
 * earlier registration of the same name (another id) does not verify a new one.
 */
export function verificationValue(domainId: string, domainName: string): string {
  const digest = createHash('sha256')
    .update(`berth-domain-verification\n${domainId}\n${domainName}`)
    .digest('base64url');
  return `berth-verification=${digest.slice(0, 32)}`;
}

/** `*.a.example.com` → `a.example.com`: where a wildcard's own records (ownership) live. */
export function baseName(domainName: string): string {
  return domainName.startsWith('*.') ? domainName.slice(2) : domainName;
}

function withoutTrailingDot(name: string): string {
  return name.replace(/\.$/, '');
}

/**
 * The records a domain needs, routing first:
 * - ROUTING: an alias `A` to `targetDnsName` when `targetZoneId` is set (Route 53 alias in that
 *   zone; works at a zone apex), else a `CNAME` to `targetDnsName`; none without a target.
 * - OWNERSHIP_VERIFICATION: `TXT` at `_berth-verification.<name without *.>`.
 * - CERTIFICATE_VALIDATION: the certificate's validation records, as the authority gave them.
 */
export function expectedRecords(domain: DomainRecordInput, validationRecords: ValidationRecord[]): DomainRecord[] {
  const ownership: RecordOwnership = domain.managedByService ? 'SERVICE' : 'USER';
  const records: DomainRecord[] = [];
  if (domain.targetDnsName !== null) {
    records.push({
      name: domain.domainName,
      type: domain.targetZoneId !== null ? 'A' : 'CNAME',
      expected: withoutTrailingDot(domain.targetDnsName),
      ownership,
      role: 'ROUTING',
    });
  }
  records.push({
    name: `${VERIFICATION_LABEL}.${baseName(domain.domainName)}`,
    type: 'TXT',
    expected: verificationValue(domain.id, domain.domainName),
    ownership,
    role: 'OWNERSHIP_VERIFICATION',
  });
  for (const v of validationRecords) {
    records.push({
      name: withoutTrailingDot(v.name).toLowerCase(),
      type: v.type.toUpperCase(),
      expected: v.type.toUpperCase() === 'TXT' ? v.value : withoutTrailingDot(v.value),
      ownership,
      role: 'CERTIFICATE_VALIDATION',
    });
  }
  return records;
}
