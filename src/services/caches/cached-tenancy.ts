import type { LogSourceKey, Tenancy } from '../../store/tenancy.js';
import { CachedLookup } from './cached-lookup.js';
import type { CacheInvalidation } from './invalidation.js';
import { type CacheOptions, FOUND_TTL_MS } from './options.js';

/** The tables each answer is read through: a write to any of them flushes that lookup (migration 004 notifies). */
const OWNERS = ['projects'];
const ENVIRONMENTS = ['environments', ...OWNERS];
const INSTANCES = ['module_instances', ...ENVIRONMENTS];
// A log source or deployment resource wired through another organization's account does not exist (issue 9),
// so their answers also depend on the account's owner.
const THROUGH_ACCOUNTS = ['cloud_accounts', ...INSTANCES];

/**
 * The tenancy lookups answered from memory while the change feed listens. Every answer is the store's
 * own (`storeTenancy`): the cache only decides whether to ask again, and it is flushed by every write
 * to a table the answer was read through, on every replica.
 */
export function cachedTenancy(store: Tenancy, invalidation: CacheInvalidation, options: CacheOptions): Tenancy {
  const lookup = (tables: string[], load: (id: string) => Promise<string | undefined>) =>
    new CachedLookup<string>(invalidation, {
      tables,
      maxEntries: options.maxEntries,
      ttlMs: FOUND_TTL_MS,
      missingTtlMs: options.missingTtlMs,
      load,
    });
  const project = lookup(OWNERS, (id) => store.project(id));
  const environment = lookup(ENVIRONMENTS, (id) => store.environment(id));
  const moduleInstance = lookup(INSTANCES, (id) => store.moduleInstance(id));
  const instancesOfEnvironment = new CachedLookup<readonly string[]>(invalidation, {
    tables: INSTANCES,
    maxEntries: options.maxEntries,
    ttlMs: FOUND_TTL_MS,
    missingTtlMs: 0,
    load: (id) => store.instancesOfEnvironment(id),
  });
  const certificate = lookup(['certificates', ...INSTANCES], (id) => store.certificate(id));
  const cloudAccount = lookup(['cloud_accounts'], (id) => store.cloudAccount(id));
  const deploymentResource = lookup(['deployment_resources', ...THROUGH_ACCOUNTS], (id) =>
    store.deploymentResource(id),
  );
  const logSource = lookup(['log_sources', ...THROUGH_ACCOUNTS], (key) => store.logSource(parseSourceKey(key)));
  return {
    project: (id) => project.get(id),
    environment: (id) => environment.get(id),
    moduleInstance: (id) => moduleInstance.get(id),
    moduleInstances: (ids) => moduleInstance.getMany(ids, (misses) => store.moduleInstances(misses)),
    instancesOfEnvironment: (id) => instancesOfEnvironment.get(id).then((ids) => ids ?? []),
    certificate: (id) => certificate.get(id),
    cloudAccount: (id) => cloudAccount.get(id),
    deploymentResource: (id) => deploymentResource.get(id),
    logSource: (key) => logSource.get(sourceKey(key)),
  };
}

// Ids never contain NUL (they are validated identifiers), so the pair is unambiguous.
function sourceKey(key: LogSourceKey): string {
  return `${key.moduleInstanceId}\u0000${key.logSourceId}`;
}

function parseSourceKey(key: string): LogSourceKey {
  const at = key.indexOf('\u0000');
  return { moduleInstanceId: key.slice(0, at), logSourceId: key.slice(at + 1) };
}
