import type { DnsCheckResult } from '../../domains/dns-resolver.js';
import { expectedRecords, VERIFICATION_LABEL } from '../../../core/dns-records.js';
import type { Db } from '../../../store/db.js';
import { dnsRecordsAt, managedDomainsNamed, replaceDnsRecordSets } from '../../../store/domains/dns-records.js';
import { ProviderError } from '../../errors.js';
import type { DnsRecord, DnsZone } from '../../domains/dns-zone.js';

export function canonicalDnsName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

/** How a served value is compared with the expected one: names without case or trailing dot, TXT exactly. */
export function sameRecordValue(type: string, a: string, b: string): boolean {
  return type === 'TXT' ? a === b : canonicalDnsName(a) === canonicalDnsName(b);
}

/**
 * The embedded zone of the managed domains: the records Berth writes live in `dns_records`.
 * Nothing on the Internet serves them, so this zone is the authority Berth checks managed
 * domains against. An alias A record is stored as type `A` with the alias target's name as value.
 */
export class LocalDnsZone implements DnsZone {
  readonly provider = 'local' as const;

  constructor(private readonly db: Db) {}

  async upsert(records: DnsRecord[]): Promise<void> {
    if (records.length === 0) return;
    const sets = new Map<string, { name: string; type: string; values: Set<string> }>();
    for (const r of records) {
      const name = canonicalDnsName(r.name);
      const type = r.type.toUpperCase();
      const value = type === 'TXT' ? r.value : canonicalDnsName(r.value);
      const key = `${type} ${name}`;
      const set = sets.get(key) ?? { name, type, values: new Set<string>() };
      set.values.add(value);
      sets.set(key, set);
    }
    try {
      await replaceDnsRecordSets(
        this.db,
        [...sets.values()].map((set) => ({ name: set.name, type: set.type, values: [...set.values] })),
      );
    } catch (error) {
      throw new ProviderError(
        'dns-zone',
        'local',
        `The local DNS zone could not be updated: ${(error as Error).message}`,
        {
          operation: 'upsert',
        },
        { cause: error },
      );
    }
  }

  async checkAll(records: DnsRecord[]): Promise<DnsCheckResult[]> {
    if (records.length === 0) return [];
    const names = [...new Set(records.map((r) => canonicalDnsName(r.name)))];
    const stored = await dnsRecordsAt(this.db, names);
    const published = await this.publishedForManagedDomains(names);
    return records.map((record) => {
      const name = canonicalDnsName(record.name);
      const type = record.type.toUpperCase();
      const own = stored.filter((row) => row.name === name && row.type === type).map((row) => row.value);
      // A record set in dns_records replaces what the service publishes at that name and type.
      const served =
        own.length > 0 ? own : published.filter((r) => r.name === name && r.type === type).map((r) => r.value);
      if (served.length === 0) return 'absent';
      return served.some((value) => sameRecordValue(type, value, record.value)) ? 'match' : 'mismatch';
    });
  }

  /**
   * The routing and ownership records of the managed domains at these names. Publishing them is
   * part of creating a managed domain, which happens outside Berth's API (fixtures); in the
   * embedded zone they are therefore served as the service would have published them.
   * Certificate validation records are never implied: they are served once written (the retry).
   */
  private async publishedForManagedDomains(names: string[]): Promise<DnsRecord[]> {
    const candidates = new Set<string>();
    for (const name of names) {
      candidates.add(name);
      if (name.startsWith(`${VERIFICATION_LABEL}.`)) {
        const base = name.slice(VERIFICATION_LABEL.length + 1);
        candidates.add(base);
        candidates.add(`*.${base}`);
      }
    }
    const domains = await managedDomainsNamed(this.db, [...candidates]);
    return domains.flatMap((d) =>
      expectedRecords(
        {
          id: d.id,
          domainName: d.domain_name,
          managedByService: true,
          targetDnsName: d.target_dns_name,
          targetZoneId: d.target_zone_id,
        },
        [],
      ).map((r) => ({ name: canonicalDnsName(r.name), type: r.type, value: r.expected })),
    );
  }
}
