import { LRUCache } from 'lru-cache';
import type { CacheInvalidation, Invalidatable } from './invalidation.js';

/** `CachedLookup.peek`'s answer when memory cannot answer. */
export const NOT_IN_MEMORY: unique symbol = Symbol('not in memory');

/** `getMany` reads at most this many misses one key at a time; more are one `loadMany`. */
const MANY_THROUGH_GET = 16;

export interface CachedLookupOptions<V> {
  /** Tables whose every write may change an answer: any write to one of them flushes the cache. */
  tables: readonly string[];
  /** Bound on each of the two LRUs (found, missing); 0 turns the cache off. */
  maxEntries: number;
  /** How long a found value may be kept: a backstop only, changes flush it at once. */
  ttlMs: number;
  /**
   * How long an answer of "none" is kept (0: never). Short, and in an LRU of its own, so a flood of
   * unknown keys evicts only other unknown keys, never a value that was found.
   */
  missingTtlMs: number;
  /** Reads the answer from the database; undefined means there is none. */
  load(key: string): Promise<V | undefined>;
}

/**
 * A lookup by key, answered from memory while the change feed listens and straight from the database when
 * it does not. A load that started before a flush is not kept (it may have read what the flush was about);
 * concurrent misses of one key share one load.
 */
export class CachedLookup<V extends {}> implements Invalidatable {
  readonly tables: readonly string[];
  readonly #found: LRUCache<string, V> | undefined;
  readonly #missing: LRUCache<string, true> | undefined;
  readonly #loading = new Map<string, Promise<V | undefined>>();
  #generation = 0;

  constructor(
    private readonly invalidation: CacheInvalidation,
    private readonly options: CachedLookupOptions<V>,
  ) {
    this.tables = options.tables;
    if (options.maxEntries > 0) {
      this.#found = new LRUCache({ max: options.maxEntries, ttl: options.ttlMs });
      if (options.missingTtlMs > 0)
        this.#missing = new LRUCache({ max: options.maxEntries, ttl: options.missingTtlMs });
    }
    invalidation.register(this);
  }

  get(key: string): Promise<V | undefined> {
    const known = this.peek(key);
    if (known !== NOT_IN_MEMORY) return Promise.resolve(known);
    const found = this.#found;
    if (found === undefined || !this.invalidation.active) return this.options.load(key);
    return this.#loading.get(key) ?? this.#load(found, key);
  }

  /**
   * The answer memory holds, without a promise: the value, `undefined` for a key known to have none, or
   * `NOT_IN_MEMORY` when only the database can tell (a miss, or the cache bypassed). The hot path of a request
   * (a known token, a known organization) answers from this without a turn of the microtask queue.
   */
  peek(key: string): V | undefined | typeof NOT_IN_MEMORY {
    const found = this.#found;
    if (found === undefined || !this.invalidation.active) return NOT_IN_MEMORY;
    const hit = found.get(key);
    if (hit !== undefined) return hit;
    if (this.#missing?.get(key) === true) return undefined;
    return NOT_IN_MEMORY;
  }

  /**
   * `get` for many keys at once: what memory holds is answered from it; a few misses go through `get`, more than
   * `MANY_THROUGH_GET` are read by one `loadMany` (which answers the keys that have a value; the others have none)
   * and kept under the same rule as a single load. The answer has the keys that have a value.
   */
  async getMany(
    keys: readonly string[],
    loadMany: (keys: string[]) => Promise<Map<string, V>>,
  ): Promise<Map<string, V>> {
    const out = new Map<string, V>();
    const misses: string[] = [];
    for (const key of new Set(keys)) {
      const known = this.peek(key);
      if (known === NOT_IN_MEMORY) misses.push(key);
      else if (known !== undefined) out.set(key, known);
    }
    if (misses.length === 0) return out;
    if (misses.length <= MANY_THROUGH_GET) {
      const values = await Promise.all(misses.map((key) => this.get(key)));
      misses.forEach((key, i) => {
        const value = values[i];
        if (value !== undefined) out.set(key, value);
      });
      return out;
    }
    const generation = this.#generation;
    const loaded = await loadMany(misses);
    const keep = generation === this.#generation && this.invalidation.active;
    for (const key of misses) {
      const value = loaded.get(key);
      if (value !== undefined) out.set(key, value);
      if (!keep) continue;
      if (value !== undefined) this.#found?.set(key, value);
      else this.#missing?.set(key, true);
    }
    return out;
  }

  flush(): void {
    this.#generation += 1;
    this.#found?.clear();
    this.#missing?.clear();
    this.#loading.clear();
  }

  /** Entries held now (for tests and metrics). */
  get size(): { found: number; missing: number } {
    return { found: this.#found?.size ?? 0, missing: this.#missing?.size ?? 0 };
  }

  #load(found: LRUCache<string, V>, key: string): Promise<V | undefined> {
    const generation = this.#generation;
    const loading = this.options.load(key).then(
      (value) => {
        if (this.#loading.get(key) === loading) this.#loading.delete(key);
        if (generation === this.#generation && this.invalidation.active) {
          if (value !== undefined) found.set(key, value);
          else this.#missing?.set(key, true);
        }
        return value;
      },
      (error: unknown) => {
        if (this.#loading.get(key) === loading) this.#loading.delete(key);
        throw error;
      },
    );
    this.#loading.set(key, loading);
    return loading;
  }
}
