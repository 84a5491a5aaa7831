import { LRUCache } from 'lru-cache';

/**
 * Counts events per key in fixed windows: the first event of a key opens its window of `windowMs`, and the count
 * starts again once it has passed. Memory is bounded: past `maxKeys` the least recently counted keys are forgotten.
 */
export class WindowCounter {
  readonly #entries: LRUCache<string, { count: number; endsAt: number }>;

  constructor(
    private readonly windowMs: number,
    maxKeys = 100_000,
  ) {
    this.#entries = new LRUCache({ max: maxKeys });
  }

  /** Counts one event of `key`; returns the count in its window, this one included. */
  add(key: string, now = Date.now()): number {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.endsAt <= now) {
      this.#entries.set(key, { count: 1, endsAt: now + this.windowMs });
      return 1;
    }
    entry.count += 1;
    return entry.count;
  }

  /** The count of `key` in its current window. */
  count(key: string, now = Date.now()): number {
    const entry = this.#entries.get(key);
    return entry === undefined || entry.endsAt <= now ? 0 : entry.count;
  }

  /** Milliseconds until the window of `key` ends (0 when it has none). */
  remainingMs(key: string, now = Date.now()): number {
    const entry = this.#entries.get(key);
    return entry === undefined || entry.endsAt <= now ? 0 : entry.endsAt - now;
  }

  /** Keys counted and not yet forgotten (their windows may have ended): 0 means no key has a count. */
  get size(): number {
    return this.#entries.size;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
