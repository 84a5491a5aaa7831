import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CachedLookup, type CachedLookupOptions, NOT_IN_MEMORY } from '../../../src/services/caches/cached-lookup.js';
import { CacheInvalidation } from '../../../src/services/caches/invalidation.js';
import { FakeChangeFeed } from './fake-change-feed.js';

/** A "database": values by key, and how many times each key was read. */
function world() {
  const rows = new Map<string, string>([
    ['a', 'A1'],
    ['b', 'B1'],
  ]);
  const reads: string[] = [];
  const feed = new FakeChangeFeed();
  const caches = new CacheInvalidation(feed);
  const lookup = (options: Partial<CachedLookupOptions<string>> = {}) =>
    new CachedLookup<string>(caches, {
      tables: ['things'],
      maxEntries: 100,
      ttlMs: 60_000,
      missingTtlMs: 1_000,
      load: async (key) => {
        reads.push(key);
        return rows.get(key);
      },
      ...options,
    });
  return { rows, reads, feed, caches, lookup };
}

describe('CachedLookup', () => {
  it('reads a key from the database once, then answers from memory', async () => {
    const w = world();
    const cache = w.lookup();
    expect(await cache.get('a')).toBe('A1');
    expect(await cache.get('a')).toBe('A1');
    expect(w.reads).toEqual(['a']);
  });

  it('forgets everything when a table it reads changes, and nothing when another table changes', async () => {
    const w = world();
    const cache = w.lookup();
    await cache.get('a');
    w.rows.set('a', 'A2');
    w.feed.changed('unrelated');
    expect(await cache.get('a')).toBe('A1');
    w.feed.changed('things');
    expect(await cache.get('a')).toBe('A2');
    expect(w.reads).toEqual(['a', 'a']);
  });

  it('does not keep a value read before a change that arrived while the read was under way', async () => {
    const w = world();
    let release!: () => void;
    const cache = w.lookup({
      load: async (key) => {
        const before = w.rows.get(key);
        w.reads.push(key);
        await new Promise<void>((resolve) => (release = resolve));
        return before;
      },
    });
    const first = cache.get('a');
    w.rows.set('a', 'A2');
    w.feed.changed('things');
    release();
    expect(await first).toBe('A1');
    const second = cache.get('a');
    release();
    expect(await second).toBe('A2');
    expect(w.reads).toEqual(['a', 'a']);
  });

  it('shares one read between concurrent misses of a key', async () => {
    const w = world();
    const cache = w.lookup();
    expect(await Promise.all([cache.get('a'), cache.get('a'), cache.get('a')])).toEqual(['A1', 'A1', 'A1']);
    expect(w.reads).toEqual(['a']);
  });

  it('remembers a missing key for its short time only, and forgets it when the table changes', async () => {
    const w = world();
    // Real time: lru-cache reads its clock through a reference taken when it loads.
    const cache = w.lookup({ missingTtlMs: 50 });
    expect(await cache.get('z')).toBeUndefined();
    expect(await cache.get('z')).toBeUndefined();
    expect(w.reads).toEqual(['z']);
    await sleep(60);
    expect(await cache.get('z')).toBeUndefined();
    expect(w.reads).toEqual(['z', 'z']);
    w.rows.set('z', 'Z1');
    w.feed.changed('things');
    expect(await cache.get('z')).toBe('Z1');
  });

  it('bypasses memory while the feed does not listen, and flushes when it listens again', async () => {
    const w = world();
    const cache = w.lookup();
    await cache.get('a');
    w.feed.lose();
    expect(cache.size).toEqual({ found: 0, missing: 0 });
    w.rows.set('a', 'A2');
    expect(await cache.get('a')).toBe('A2');
    w.rows.set('a', 'A3');
    // Nothing learned while not listening is kept: this change was never announced.
    expect(await cache.get('a')).toBe('A3');
    expect(cache.size.found).toBe(0);
    w.feed.listen();
    expect(await cache.get('a')).toBe('A3');
    expect(await cache.get('a')).toBe('A3');
    expect(w.reads).toEqual(['a', 'a', 'a', 'a']);
  });

  it('peek answers only what memory holds: a value, a known miss, or NOT_IN_MEMORY (never a stale value)', async () => {
    const w = world();
    const cache = w.lookup();
    expect(cache.peek('a')).toBe(NOT_IN_MEMORY);
    expect(cache.peek('zz')).toBe(NOT_IN_MEMORY);
    await cache.get('a');
    await cache.get('zz');
    expect(cache.peek('a')).toBe('A1');
    expect(cache.peek('zz')).toBeUndefined();
    expect(w.reads).toEqual(['a', 'zz']);
    w.rows.set('a', 'A2');
    w.feed.changed('things');
    expect(cache.peek('a')).toBe(NOT_IN_MEMORY);
    await cache.get('a');
    expect(cache.peek('a')).toBe('A2');
    w.feed.lose();
    expect(cache.peek('a')).toBe(NOT_IN_MEMORY);
    expect(w.reads).toEqual(['a', 'zz', 'a']);
  });

  it('getMany: memory first, a few misses one by one, many misses in one load that is kept unless a change came meanwhile', async () => {
    const w = world();
    for (let i = 0; i < 40; i++) w.rows.set(`k${i}`, `V${i}`);
    const cache = w.lookup();
    const batches: string[][] = [];
    let hold: Promise<void> | undefined;
    const loadMany = async (keys: string[]) => {
      batches.push(keys);
      await hold;
      return new Map(keys.flatMap((k) => (w.rows.has(k) ? [[k, w.rows.get(k)!] as const] : [])));
    };
    const keys = [...Array.from({ length: 30 }, (_, i) => `k${i}`), 'nope', 'k0'];
    const first = await cache.getMany(keys, loadMany);
    expect(first.size).toBe(30);
    expect(first.get('k7')).toBe('V7');
    expect(first.has('nope')).toBe(false);
    expect(batches).toEqual([[...Array.from({ length: 30 }, (_, i) => `k${i}`), 'nope']]);
    expect(w.reads).toEqual([]);
    // All in memory now (the unknown key as a known miss): no load at all.
    expect((await cache.getMany(keys, loadMany)).size).toBe(30);
    expect(batches).toHaveLength(1);
    expect(cache.peek('nope')).toBeUndefined();
    // Two misses: through get, one read each.
    expect((await cache.getMany(['k1', 'k30', 'k31'], loadMany)).size).toBe(3);
    expect(w.reads).toEqual(['k30', 'k31']);
    // A change that arrives while a batch is being read: the batch answers, but nothing of it is kept.
    w.feed.changed('things');
    let release!: () => void;
    hold = new Promise<void>((resolve) => (release = resolve));
    const pending = cache.getMany(keys, loadMany);
    await sleep(5);
    w.feed.changed('things');
    release();
    expect((await pending).size).toBe(30);
    expect(cache.peek('k3')).toBe(NOT_IN_MEMORY);
  });

  it('does not keep a read that started before the feed dropped and came back', async () => {
    const w = world();
    let release!: () => void;
    const cache = w.lookup({
      load: async (key) => {
        const before = w.rows.get(key);
        await new Promise<void>((resolve) => (release = resolve));
        return before;
      },
    });
    const stale = cache.get('a');
    w.feed.lose();
    w.rows.set('a', 'A2');
    w.feed.listen();
    release();
    expect(await stale).toBe('A1');
    expect(cache.size.found).toBe(0);
  });

  it('holds at most its bound of found and of missing keys, so unknown keys never evict known ones', async () => {
    const w = world();
    const cache = w.lookup({ maxEntries: 50 });
    for (let i = 0; i < 50; i++) w.rows.set(`k${i}`, `v${i}`);
    for (let i = 0; i < 50; i++) await cache.get(`k${i}`);
    for (let i = 0; i < 10_000; i++) await cache.get(`unknown-${i}`);
    expect(cache.size).toEqual({ found: 50, missing: 50 });
    const before = w.reads.length;
    for (let i = 0; i < 50; i++) expect(await cache.get(`k${i}`)).toBe(`v${i}`);
    expect(w.reads.length).toBe(before);
  });

  it('reads the database every time when turned off (no entries allowed)', async () => {
    const w = world();
    const cache = w.lookup({ maxEntries: 0 });
    await cache.get('a');
    await cache.get('a');
    await cache.get('z');
    await cache.get('z');
    expect(w.reads).toEqual(['a', 'a', 'z', 'z']);
  });

  it('passes a failed read to every waiting caller and keeps nothing of it', async () => {
    const w = world();
    let fail = true;
    const cache = w.lookup({
      load: async (key) => {
        w.reads.push(key);
        if (fail) throw new Error('database down');
        return w.rows.get(key);
      },
    });
    await expect(Promise.all([cache.get('a'), cache.get('a')])).rejects.toThrow('database down');
    fail = false;
    expect(await cache.get('a')).toBe('A1');
    expect(w.reads).toEqual(['a', 'a']);
  });
});
