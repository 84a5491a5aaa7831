import type { DnsCheckResult } from './dns-resolver.js';
import type { ProviderKind } from '../errors.js';

/** One record in a zone: `name` without trailing dot, `value` a CNAME target, TXT text or A address/alias target. */
export interface DnsRecord {
  name: string;
  type: string;
  value: string;
}

/**
 * Where the service publishes the records of the domains it manages (docs/design.md#providers): Berth's own
 * database (`local`) or Route 53 (`aws`). Errors are ProviderErrors.
 */
export interface DnsZone {
  readonly provider: ProviderKind;
  /** Creates or replaces each record set (name and type) so it holds exactly the given values. */
  upsert(records: DnsRecord[]): Promise<void>;
  /**
   * What the zone itself serves for each record, for a zone that is the authority Berth checks
   * against; `undefined` where public DNS must be asked instead. Same order as `records`.
   */
  checkAll(records: DnsRecord[]): Promise<(DnsCheckResult | undefined)[]>;
}
