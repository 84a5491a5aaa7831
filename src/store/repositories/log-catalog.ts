import { sql } from 'kysely';
import type { ProviderKind } from '../../core/enums.js';
import type { Executor } from '../db.js';
import { deploymentResourceOwners, logSourceOwners, moduleInstanceOwners } from '../tenancy.js';

/** A module instance with the project and environment it sits in. */
export interface CatalogInstanceRow {
  projectId: string;
  projectName: string;
  environmentId: string;
  environmentName: string;
  id: string;
  name: string;
}

export interface CatalogLogSourceRow {
  moduleInstanceId: string;
  id: string;
  cloudAccountId: string;
  provider: ProviderKind;
  region: string;
  logGroup: string;
  logStreamPrefix: string | null;
}

export interface CatalogResourceRow {
  moduleInstanceId: string;
  id: string;
  type: string;
  cloudAccountId: string;
  region: string;
  snapshot: unknown;
}

// Tree order: by name then id at each level, in code point order ("C"), so PGlite and a PostgreSQL server of any
// locale list (and cut) the same rows.
const c = (column: string) => sql`${sql.ref(column)} COLLATE "C"`;
const TREE_ORDER = ['p.name', 'p.id', 'e.name', 'e.id', 'mi.name', 'mi.id'].map(c);

export async function findOrganizationName(
  db: Executor,
  organizationId: string,
): Promise<{ id: string; name: string } | undefined> {
  return db.selectFrom('organizations').select(['id', 'name']).where('id', '=', organizationId).executeTakeFirst();
}

/** The organization's module instances joined to their environment and project, for names and order. */
function instancesOf(db: Executor, organizationId: string) {
  return db
    .selectFrom(moduleInstanceOwners(db).as('o'))
    .innerJoin('module_instances as mi', 'mi.id', 'o.module_instance_id')
    .innerJoin('environments as e', 'e.id', 'o.environment_id')
    .innerJoin('projects as p', 'p.id', 'o.project_id')
    .where('o.organization_id', '=', organizationId);
}

function inTreeOrder<Q extends { orderBy(expression: ReturnType<typeof c>): Q }>(q: Q): Q {
  return TREE_ORDER.reduce((acc, expression) => acc.orderBy(expression), q);
}

/** Up to `limit` of the organization's module instances, in tree order. */
export async function listCatalogInstances(
  db: Executor,
  organizationId: string,
  limit: number,
): Promise<CatalogInstanceRow[]> {
  const q = instancesOf(db, organizationId).select([
    'p.id as projectId',
    'p.name as projectName',
    'e.id as environmentId',
    'e.name as environmentName',
    'mi.id',
    'mi.name',
  ]);
  return inTreeOrder(q).limit(limit).execute();
}

/**
 * Up to `limit` `ui.logs` sources of these module instances of the organization, in tree order then by id. Only
 * sources that exist under the tenancy rule (none reading through another organization's account).
 */
export async function listCatalogLogSources(
  db: Executor,
  organizationId: string,
  moduleInstanceIds: readonly string[],
  limit: number,
): Promise<CatalogLogSourceRow[]> {
  if (moduleInstanceIds.length === 0) return [];
  const q = instancesOf(db, organizationId)
    .innerJoin('log_sources as ls', 'ls.module_instance_id', 'mi.id')
    .innerJoin(logSourceOwners(db).as('own'), (join) =>
      join.onRef('own.module_instance_id', '=', 'ls.module_instance_id').onRef('own.log_source_id', '=', 'ls.id'),
    )
    .innerJoin('cloud_accounts as a', 'a.id', 'ls.cloud_account_id')
    .where('own.organization_id', '=', organizationId)
    .where('ls.kind', '=', 'ui.logs')
    .where('mi.id', 'in', [...moduleInstanceIds])
    .select([
      'ls.module_instance_id as moduleInstanceId',
      'ls.id',
      'ls.cloud_account_id as cloudAccountId',
      'a.provider',
      'ls.region',
      'ls.log_group as logGroup',
      'ls.log_stream_prefix as logStreamPrefix',
    ]);
  return inTreeOrder(q).orderBy(c('ls.id')).limit(limit).execute();
}

/**
 * Up to `limit` deployment resources of these module instances of the organization, in tree order then by id.
 * Only resources that exist under the tenancy rule.
 */
export async function listCatalogResources(
  db: Executor,
  organizationId: string,
  moduleInstanceIds: readonly string[],
  limit: number,
): Promise<CatalogResourceRow[]> {
  if (moduleInstanceIds.length === 0) return [];
  const q = instancesOf(db, organizationId)
    .innerJoin('deployment_resources as dr', 'dr.module_instance_id', 'mi.id')
    .innerJoin(deploymentResourceOwners(db).as('own'), 'own.deployment_resource_id', 'dr.id')
    .where('own.organization_id', '=', organizationId)
    .where('mi.id', 'in', [...moduleInstanceIds])
    .select([
      'dr.module_instance_id as moduleInstanceId',
      'dr.id',
      'dr.type',
      'dr.cloud_account_id as cloudAccountId',
      'dr.region',
      'dr.snapshot',
    ]);
  return inTreeOrder(q).orderBy(c('dr.id')).limit(limit).execute();
}
