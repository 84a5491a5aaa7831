import type { Executor } from '../../store/db.js';
import { type LogSourceWithAccount, listLogSourcesOfInstances } from '../../store/repositories/log-sources.js';
import { CachedLookup } from './cached-lookup.js';
import type { CacheInvalidation } from './invalidation.js';
import { type CacheOptions, FOUND_TTL_MS } from './options.js';

/** The log sources of a kind of these module instances, with their accounts (`listLogSourcesOfInstances`). */
export type LogSourceCatalog = (moduleInstanceIds: readonly string[], kind: string) => Promise<LogSourceWithAccount[]>;

/** What a module instance's sources are read through: a write to any of these flushes the cache. */
const TABLES = ['log_sources', 'cloud_accounts', 'module_instances', 'environments', 'projects'];

/**
 * Every log query reads its instances' log sources (a join through the tenancy rule, the second costliest
 * statement of the load test on PGlite): answered from memory per instance while the change feed listens, flushed
 * by every write to a table the answer was read through, on every replica. Same answer as the database's, in its
 * order (instance, then source id).
 */
export function cachedLogSources(
  db: Executor,
  invalidation: CacheInvalidation,
  options: CacheOptions,
): LogSourceCatalog {
  const perInstance = new CachedLookup<LogSourceWithAccount[]>(invalidation, {
    tables: TABLES,
    maxEntries: options.maxEntries,
    ttlMs: FOUND_TTL_MS,
    missingTtlMs: 0,
    load: (key) => {
      const at = key.indexOf('\u0000');
      return listLogSourcesOfInstances(db, [key.slice(at + 1)], key.slice(0, at));
    },
  });
  return async (moduleInstanceIds, kind) => {
    const unique = [...new Set(moduleInstanceIds)].sort();
    const keys = unique.map((id) => `${kind}\u0000${id}`);
    const byKey = await perInstance.getMany(keys, async (misses) => {
      const ids = misses.map((key) => key.slice(key.indexOf('\u0000') + 1));
      // Every instance asked has an answer, an instance without sources an empty one.
      const found = new Map<string, LogSourceWithAccount[]>(ids.map((id) => [`${kind}\u0000${id}`, []]));
      for (const source of await listLogSourcesOfInstances(db, ids, kind))
        found.get(`${kind}\u0000${source.moduleInstanceId}`)?.push(source);
      return found;
    });
    return keys.flatMap((key) => byKey.get(key) ?? []);
  };
}
