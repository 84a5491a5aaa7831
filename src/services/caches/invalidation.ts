import { Listeners } from '../../core/listeners.js';
import type { ChangeEvent, ChangeFeed } from '../../store/change-feed.js';

/** A cache that drops everything it holds when one of the tables it reads changes. */
export interface Invalidatable {
  readonly tables: readonly string[];
  flush(): void;
}

/**
 * Connects in-process caches to the database's change feed. A write to a table flushes every cache that
 * reads it, on every replica. Caches answer only while the feed listens (`active`): when it stops, all of
 * them are flushed and bypassed, and flushed again once it listens, since what was written in between was
 * never announced. So a cache can be stale only for the time a notification takes to arrive.
 */
export class CacheInvalidation {
  readonly #all = new Set<Invalidatable>();
  readonly #byTable = new Map<string, Set<Invalidatable>>();
  readonly #unsubscribe: () => void;
  readonly #watchers = new Listeners<[active: boolean, error?: unknown]>();

  constructor(private readonly feed: ChangeFeed) {
    this.#unsubscribe = feed.subscribe((event) => this.#apply(event));
  }

  /** Whether caches may answer now. */
  get active(): boolean {
    return this.feed.listening;
  }

  register(cache: Invalidatable): void {
    this.#all.add(cache);
    for (const table of cache.tables) {
      const caches = this.#byTable.get(table) ?? new Set();
      caches.add(cache);
      this.#byTable.set(table, caches);
    }
  }

  /** Calls `watcher` each time the caches stop answering (with the reason) or start again (for the log). */
  watch(watcher: (active: boolean, error?: unknown) => void): () => void {
    return this.#watchers.add(watcher);
  }

  /** Every event of the change feed (other listeners than caches: the log stream wakes local tails on ingest). */
  subscribe(listener: (event: ChangeEvent) => void): () => void {
    return this.feed.subscribe(listener);
  }

  /** Resolves once every change committed before the call has reached the caches (see `ChangeFeed.settle`). */
  settle(): Promise<void> {
    return this.feed.settle();
  }

  async close(): Promise<void> {
    this.#unsubscribe();
    for (const cache of this.#all) cache.flush();
    await this.feed.close();
  }

  #apply(event: ChangeEvent): void {
    const caches = event.kind === 'changed' ? this.#byTable.get(event.table) : this.#all;
    for (const cache of caches ?? []) cache.flush();
    if (event.kind === 'changed') return;
    // Logging must not break invalidation: Listeners drops what a watcher throws.
    this.#watchers.emit(event.kind === 'listening', event.kind === 'lost' ? event.error : undefined);
  }
}

/** For caches turned off (`CACHE_MAX_ENTRIES=0`): never listens, so no connection is held for it. */
export const NO_CHANGE_FEED: ChangeFeed = {
  listening: false,
  subscribe: () => () => undefined,
  settle: () => Promise.resolve(),
  close: () => Promise.resolve(),
};
