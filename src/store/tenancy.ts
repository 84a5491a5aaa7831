import type { Executor } from './db.js';
import { moduleInstanceIdsOfEnvironment } from './repositories/module-instances.js';

/**
 * Which organization owns an object: the one place that joins objects to their organization
 * (docs/design.md#identity-tokens-and-permissions; docs/architecture.md, "Cross-cutting pieces").
 * Another organization's object must answer like a missing one, so every check that keeps tenants
 * apart starts here.
 *
 * The rule of issue 9: a log source or deployment resource that reads through a cloud account of
 * another organization than its module instance's (a seed could once write one; the API cannot)
 * does not exist — reading through it would hand one tenant another's logs. `berth seed` refuses
 * to write one with `crossLinks`, which applies this same rule.
 */

export interface LogSourceKey {
  moduleInstanceId: string;
  logSourceId: string;
}

/**
 * Each lookup answers the owning organization's id, or undefined for an object that does not exist
 * (or that the rule above makes nonexistent). Each is one query and depends on nothing but its
 * argument, so a cache can wrap any of them.
 */
export interface Tenancy {
  project(id: string): Promise<string | undefined>;
  environment(id: string): Promise<string | undefined>;
  moduleInstance(id: string): Promise<string | undefined>;
  /** `moduleInstance` for many ids in one query: the ids that exist, each with its organization. */
  moduleInstances(ids: readonly string[]): Promise<Map<string, string>>;
  /** The ids of an environment's module instances (none for an unknown environment). */
  instancesOfEnvironment(environmentId: string): Promise<readonly string[]>;
  certificate(id: string): Promise<string | undefined>;
  cloudAccount(id: string): Promise<string | undefined>;
  deploymentResource(id: string): Promise<string | undefined>;
  logSource(key: LogSourceKey): Promise<string | undefined>;
}

/** The tenancy lookups answered by the database, on a connection or inside a transaction. */
export function storeTenancy(db: Executor): Tenancy {
  return {
    project: async (id) =>
      (await db.selectFrom('projects').select('organization_id').where('id', '=', id).executeTakeFirst())
        ?.organization_id,
    environment: async (id) =>
      (
        await db
          .selectFrom('environments as e')
          .innerJoin('projects as p', 'p.id', 'e.project_id')
          .select('p.organization_id')
          .where('e.id', '=', id)
          .executeTakeFirst()
      )?.organization_id,
    moduleInstance: async (id) =>
      (await moduleInstanceOwners(db).where('mi.id', '=', id).executeTakeFirst())?.organization_id,
    moduleInstances: async (ids) => {
      if (ids.length === 0) return new Map();
      const rows = await moduleInstanceOwners(db)
        .where('mi.id', 'in', [...new Set(ids)])
        .execute();
      return new Map(rows.map((r) => [r.module_instance_id, r.organization_id]));
    },
    instancesOfEnvironment: (environmentId) => moduleInstanceIdsOfEnvironment(db, environmentId),
    certificate: async (id) =>
      (
        await db
          .selectFrom('certificates as c')
          .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'c.module_instance_id')
          .select('o.organization_id')
          .where('c.id', '=', id)
          .executeTakeFirst()
      )?.organization_id,
    cloudAccount: async (id) =>
      (await db.selectFrom('cloud_accounts').select('organization_id').where('id', '=', id).executeTakeFirst())
        ?.organization_id,
    deploymentResource: async (id) =>
      (await deploymentResourceOwners(db).where('dr.id', '=', id).executeTakeFirst())?.organization_id,
    logSource: async (key) =>
      (
        await logSourceOwners(db)
          .where('ls.module_instance_id', '=', key.moduleInstanceId)
          .where('ls.id', '=', key.logSourceId)
          .executeTakeFirst()
      )?.organization_id,
  };
}

/**
 * Every module instance with the chain that places it in an organization. Other store code joins
 * this (PostgreSQL flattens it into plain joins) to filter or label rows by owner.
 */
export function moduleInstanceOwners(db: Executor) {
  return db
    .selectFrom('module_instances as mi')
    .innerJoin('environments as e', 'e.id', 'mi.environment_id')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .select(['mi.id as module_instance_id', 'mi.environment_id', 'e.project_id', 'p.organization_id']);
}

/** The log sources that exist under the rule above, with their organization. */
export function logSourceOwners(db: Executor) {
  return db
    .selectFrom('log_sources as ls')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'ls.module_instance_id')
    .innerJoin('cloud_accounts as a', (join) =>
      join.onRef('a.id', '=', 'ls.cloud_account_id').onRef('a.organization_id', '=', 'o.organization_id'),
    )
    .select(['ls.module_instance_id', 'ls.id as log_source_id', 'o.organization_id']);
}

/** The deployment resources that exist under the rule above, with their organization. */
export function deploymentResourceOwners(db: Executor) {
  return db
    .selectFrom('deployment_resources as dr')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'dr.module_instance_id')
    .innerJoin('cloud_accounts as a', (join) =>
      join.onRef('a.id', '=', 'dr.cloud_account_id').onRef('a.organization_id', '=', 'o.organization_id'),
    )
    .select(['dr.id as deployment_resource_id', 'o.organization_id']);
}

/** A stored link the rule above makes nonexistent. */
export interface CrossLink {
  kind: 'log-source' | 'deployment-resource';
  /** The log source's id within its module instance, or the deployment resource's id. */
  id: string;
  moduleInstanceId: string;
  instanceOrganizationId: string;
  cloudAccountId: string;
  accountOrganizationId: string;
}

/** Every stored log source and deployment resource that breaks the rule above (what a seed must not write). */
export async function crossLinks(db: Executor): Promise<CrossLink[]> {
  const sources = await db
    .selectFrom('log_sources as x')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'x.module_instance_id')
    .innerJoin('cloud_accounts as a', 'a.id', 'x.cloud_account_id')
    .leftJoin(logSourceOwners(db).as('own'), (join) =>
      join.onRef('own.module_instance_id', '=', 'x.module_instance_id').onRef('own.log_source_id', '=', 'x.id'),
    )
    .where('own.log_source_id', 'is', null)
    .select([
      'x.id',
      'x.module_instance_id',
      'o.organization_id as instance_organization_id',
      'x.cloud_account_id',
      'a.organization_id as account_organization_id',
    ])
    .orderBy('x.module_instance_id')
    .orderBy('x.id')
    .execute();
  const resources = await db
    .selectFrom('deployment_resources as x')
    .innerJoin(moduleInstanceOwners(db).as('o'), 'o.module_instance_id', 'x.module_instance_id')
    .innerJoin('cloud_accounts as a', 'a.id', 'x.cloud_account_id')
    .leftJoin(deploymentResourceOwners(db).as('own'), 'own.deployment_resource_id', 'x.id')
    .where('own.deployment_resource_id', 'is', null)
    .select([
      'x.id',
      'x.module_instance_id',
      'o.organization_id as instance_organization_id',
      'x.cloud_account_id',
      'a.organization_id as account_organization_id',
    ])
    .orderBy('x.id')
    .execute();
  const link = (kind: CrossLink['kind']) => (r: (typeof sources)[number]) => ({
    kind,
    id: r.id,
    moduleInstanceId: r.module_instance_id,
    instanceOrganizationId: r.instance_organization_id,
    cloudAccountId: r.cloud_account_id,
    accountOrganizationId: r.account_organization_id,
  });
  return [...sources.map(link('log-source')), ...resources.map(link('deployment-resource'))];
}
