import { type Compilable, CompiledQuery, sql } from 'kysely';
import type { ValidationRecord } from '../../core/dns-records.js';
import type { CertificateStatus } from '../../core/enums.js';
import type { Executor } from '../db.js';
import { moduleInstanceOwners } from '../tenancy.js';

/** A domain with the certificate it points at, if any. */
export interface DomainPageRow {
  id: string;
  domain_name: string;
  managed_by_service: boolean;
  target_dns_name: string | null;
  target_zone_id: string | null;
  certificate_id: string | null;
  cert_module_instance_id: string | null;
  cert_arn: string | null;
  cert_status: CertificateStatus | null;
  cert_issued_at: Date | null;
  cert_expires_at: Date | null;
  cert_validation_records: ValidationRecord[] | null;
}

/** A domain that may be the parent wildcard of another, with the module instance holding it. */
export interface WildcardHolderRow {
  domain_name: string;
  module_instance_id: string;
  instance_name: string;
  environment_id: string;
  project_id: string;
}

/** A module instance holding a domain name, and its organization. */
export interface DomainHolder {
  module_instance_id: string;
  organization_id: string;
}

/** Bytewise order, the same on every database; the index of migration 002 serves it. */
const NAME_ORDER = sql`d.domain_name COLLATE "C"`;
const ID_ORDER = sql`d.id COLLATE "C"`;

/** Up to `limit` of a module instance's domains after `after`, in (domainName, id) order. */
export async function domainsOfInstance(
  db: Executor,
  moduleInstanceId: string,
  limit: number,
  after?: { domainName: string; id: string },
): Promise<DomainPageRow[]> {
  let q = db
    .selectFrom('domains as d')
    .leftJoin('certificates as c', 'c.id', 'd.certificate_id')
    .select([
      'd.id',
      'd.domain_name',
      'd.managed_by_service',
      'd.target_dns_name',
      'd.target_zone_id',
      'd.certificate_id',
      'c.module_instance_id as cert_module_instance_id',
      'c.arn as cert_arn',
      'c.status as cert_status',
      'c.issued_at as cert_issued_at',
      'c.expires_at as cert_expires_at',
      'c.validation_records as cert_validation_records',
    ])
    .where('d.module_instance_id', '=', moduleInstanceId);
  if (after !== undefined) {
    q = q.where(sql<boolean>`(${NAME_ORDER}, ${ID_ORDER}) > (${after.domainName}, ${after.id})`);
  }
  return q.orderBy(NAME_ORDER).orderBy(ID_ORDER).limit(limit).execute();
}

export async function countDomainsOfInstance(db: Executor, moduleInstanceId: string): Promise<number> {
  const row = await db
    .selectFrom('domains')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('module_instance_id', '=', moduleInstanceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The domains of one organization named one of `names`, by name; for each name the holder
 * `preferredInstanceId` first, then by id.
 */
export async function domainsNamedInOrganization(
  db: Executor,
  names: readonly string[],
  organizationId: string,
  preferredInstanceId: string,
): Promise<WildcardHolderRow[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom('domains as d')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'd.module_instance_id')
    .innerJoin('module_instances as mi', 'mi.id', 'd.module_instance_id')
    .select(['d.domain_name', 'd.module_instance_id', 'mi.name as instance_name', 'o.environment_id', 'o.project_id'])
    .where('d.domain_name', 'in', [...names])
    .where('o.organization_id', '=', organizationId)
    .orderBy('d.domain_name')
    .orderBy(sql`(d.module_instance_id = ${preferredInstanceId})`, 'desc')
    .orderBy(ID_ORDER)
    .execute();
}

/** Up to `limit` holders of the domain name `name`, with their organizations. */
export async function holdersOfName(db: Executor, name: string, limit: number): Promise<DomainHolder[]> {
  return HOLDERS_OF_NAME.run(db, [name, limit]);
}

/**
 * Whether a domain matching `where` is held outside these organizations (any holder when there
 * are none): `{ name }` that name; `{ parentName, except }` a name one label under `parentName`.
 */
export async function heldOutside(
  db: Executor,
  where: { name: string } | { parentName: string; except: string },
  organizationIds: readonly string[],
): Promise<boolean> {
  // `<> all('{}')` holds for every row: no organization to leave out needs no statement of its own.
  const ids = [...organizationIds];
  const rows =
    'name' in where
      ? await HELD_OUTSIDE.named.run(db, [where.name, ids, 1])
      : await HELD_OUTSIDE.under.run(db, [where.parentName, where.except, ids, 1]);
  return rows.length > 0;
}

function holders(db: Executor) {
  return db
    .selectFrom('domains as d')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'd.module_instance_id')
    .select(['d.module_instance_id', 'o.organization_id']);
}

/**
 * A lookup whose statement Kysely builds once, on its first run, and which later runs reuse with their own
 * values: its text does not depend on them. The name-availability route runs two per request, and building them
 * was about a tenth of its CPU (docs/performance.md). `build` must make the values the statement's parameters, in
 * the order given, and nothing else; the first run checks that.
 */
class Lookup<Args extends unknown[], R> {
  #sql: string | undefined;

  constructor(private readonly build: (db: Executor, ...args: Args) => Compilable<R>) {}

  async run(db: Executor, args: Args): Promise<R[]> {
    if (this.#sql === undefined) {
      const compiled = this.build(db, ...args).compile();
      const same = compiled.parameters.length === args.length && compiled.parameters.every((p, i) => p === args[i]);
      if (!same) throw new Error('a compiled lookup must take exactly its arguments as parameters, in order');
      this.#sql = compiled.sql;
    }
    return (await db.executeQuery(CompiledQuery.raw(this.#sql, args) as CompiledQuery<R>)).rows;
  }
}

const notIn = (ids: string[]) => sql<boolean>`o.organization_id <> all(${ids}::text[])`;
const HOLDERS_OF_NAME = new Lookup((db, name: string, limit: number) =>
  holders(db).where('d.domain_name', '=', name).limit(limit),
);
const HELD_OUTSIDE = {
  named: new Lookup((db, name: string, ids: string[], limit: number) =>
    holders(db).where('d.domain_name', '=', name).where(notIn(ids)).limit(limit),
  ),
  under: new Lookup((db, parentName: string, except: string, ids: string[], limit: number) =>
    holders(db)
      .where('d.parent_name', '=', parentName)
      .where('d.domain_name', '<>', except)
      .where(notIn(ids))
      .limit(limit),
  ),
};

/** Whether the certificate serves a domain managed by the service. */
export async function certificateServesManagedDomain(db: Executor, certificateId: string): Promise<boolean> {
  const managed = await db
    .selectFrom('domains')
    .select('id')
    .where('certificate_id', '=', certificateId)
    .where('managed_by_service', '=', true)
    .limit(1)
    .executeTakeFirst();
  return managed !== undefined;
}
