import type { Executor } from '../db.js';

/** A record set of the embedded zone: every value served at one name and type. */
export interface DnsRecordSet {
  name: string;
  type: string;
  values: string[];
}

export interface DnsRecordRow {
  name: string;
  type: string;
  value: string;
}

/** A managed domain, with what its routing records point at. */
export interface ManagedDomainRow {
  id: string;
  domain_name: string;
  target_dns_name: string | null;
  target_zone_id: string | null;
}

/**
 * Replaces each record set (its name and type) with the given values, all sets in one transaction
 * (the caller's, or one of its own): the batch is applied whole or not at all, like a Route 53 change batch.
 */
export async function replaceDnsRecordSets(db: Executor, sets: DnsRecordSet[]): Promise<void> {
  const write = async (trx: Executor) => {
    for (const set of sets) {
      await trx.deleteFrom('dns_records').where('name', '=', set.name).where('type', '=', set.type).execute();
      if (set.values.length === 0) continue;
      await trx
        .insertInto('dns_records')
        .values(set.values.map((value) => ({ name: set.name, type: set.type, value })))
        .execute();
    }
  };
  if (db.isTransaction) await write(db);
  else await db.transaction().execute(write);
}

/** The stored records at these names (already canonical), every type. */
export async function dnsRecordsAt(db: Executor, names: string[]): Promise<DnsRecordRow[]> {
  if (names.length === 0) return [];
  return db.selectFrom('dns_records').select(['name', 'type', 'value']).where('name', 'in', names).execute();
}

/** The managed domains with one of these names. */
export async function managedDomainsNamed(db: Executor, names: string[]): Promise<ManagedDomainRow[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom('domains')
    .select(['id', 'domain_name', 'target_dns_name', 'target_zone_id'])
    .where('managed_by_service', '=', true)
    .where('domain_name', 'in', names)
    .execute();
}
