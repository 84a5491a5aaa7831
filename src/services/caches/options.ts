import type { Config } from '../../config.js';

/** How big and how long-lived the in-process caches are (`CACHE_MAX_ENTRIES`, `CACHE_MISSING_TTL_MS`). */
export interface CacheOptions {
  maxEntries: number;
  missingTtlMs: number;
}

/** Found values are flushed by changes; this only bounds the damage of a change that was never announced. */
export const FOUND_TTL_MS = 5 * 60_000;

export function cacheOptions(config: Pick<Config, 'CACHE_MAX_ENTRIES' | 'CACHE_MISSING_TTL_MS'>): CacheOptions {
  return { maxEntries: config.CACHE_MAX_ENTRIES, missingTtlMs: config.CACHE_MISSING_TTL_MS };
}
