import { isIPv4 } from 'node:net';
import { DNS_RECORD_TYPES, type DnsRecordType } from '../../core/enums.js';
import type { DnsZone } from '../../providers/domains/dns-zone.js';
import type { DnsCheckResult, DnsResolver } from '../../providers/domains/dns-resolver.js';

export interface ExpectedDnsRecord {
  name: string;
  type: string;
  /** A CNAME target, a TXT value, an IPv4 address, or for an alias `A` the alias target's name. */
  expected: string;
}

const CHECKABLE: ReadonlySet<string> = new Set(DNS_RECORD_TYPES);

/**
 * Checks that records resolve as expected: through the zone when it serves them itself (the
 * local zone of managed domains), else through public DNS with the resolver. Lookups run
 * concurrently; each is bounded by the resolver's timeout, so a whole batch is too.
 */
export class RecordChecker {
  constructor(private readonly resolver: DnsResolver) {}

  async checkAll(records: ExpectedDnsRecord[], zone?: DnsZone): Promise<DnsCheckResult[]> {
    const own =
      zone === undefined
        ? []
        : await zone.checkAll(records.map((r) => ({ name: r.name, type: r.type, value: r.expected })));
    return Promise.all(records.map((record, i) => own[i] ?? this.checkPublic(record)));
  }

  private async checkPublic(record: ExpectedDnsRecord): Promise<DnsCheckResult> {
    const type = record.type.toUpperCase();
    // Other record types are never published by Berth; nothing checks them, so they never verify.
    if (!CHECKABLE.has(type)) return 'absent';
    if (type === 'A' && !isIPv4(record.expected)) return this.checkAlias(record);
    return this.resolver.check({ name: record.name, type: type as DnsRecordType, expected: record.expected });
  }

  /**
   * An alias answers with its target's addresses, so it resolves as expected when the name's A
   * addresses are among the target's.
   */
  private async checkAlias(record: ExpectedDnsRecord): Promise<DnsCheckResult> {
    let own: string[];
    let target: string[];
    try {
      [own, target] = await Promise.all([this.resolver.resolveA(record.name), this.resolver.resolveA(record.expected)]);
    } catch {
      return 'timeout';
    }
    if (own.length === 0) return 'absent';
    return own.some((address) => target.includes(address)) ? 'match' : 'mismatch';
  }
}
