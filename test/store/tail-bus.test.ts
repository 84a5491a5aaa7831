import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/core/database-unavailable.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import {
  BUS_START,
  type BusEntry,
  type Lease,
  type TailBus,
  type TailLeases,
  openTailCluster,
  type TailClusterOptions,
} from '../../src/store/log-stream/tail-bus/index.js';
import { keyHash } from '../../src/store/log-stream/tail-bus/subscriptions.js';
import { startDbProxy, type DbProxy } from '../reliability/support/db-proxy.js';
import { createTestDatabase, onPostgres, pgliteTarget } from '../support/database.js';
import { reachable, TEST_REDIS_URL } from '../support/redis.js';

const REDIS_URL = TEST_REDIS_URL;

const redisUp = await reachable(REDIS_URL);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What one subscriber saw, in order: entries' seqs and gaps. */
interface Seen {
  entries: BusEntry[];
  events: string[];
  gaps: number;
  stop: () => void;
}

function watch(bus: TailBus, key: string, afterSeq: string | undefined): Seen {
  const seen: Seen = { entries: [], events: [], gaps: 0, stop: () => undefined };
  seen.stop = bus.subscribe(
    key,
    afterSeq,
    (entries) => {
      seen.entries.push(...entries);
      seen.events.push(...entries.map((e) => e.seq));
    },
    () => {
      seen.gaps += 1;
      seen.events.push('gap');
    },
  );
  return seen;
}

const isIncreasing = (seqs: string[]) => seqs.every((s, i) => i === 0 || s > seqs[i - 1]!);

type Kind = 'memory' | 'postgres' | 'redis';

/** One environment: a database (and Redis prefix) that replicas share. */
interface World {
  kind: Kind;
  store: Store;
  url?: string;
  /** A replica; `via` routes its bus backend (PostgreSQL or Redis) and its leases through a proxy. */
  replica(options?: Partial<TailClusterOptions>, via?: DbProxy): Promise<{ bus: TailBus; leases: TailLeases }>;
  admin?: pg.Client;
}

let pglite: Store | undefined;
/** The key of the running test: tests share one database (creating one per test would take most of the time). */
let k = '';
beforeAll(async () => {
  pglite = await openStore(pgliteTarget());
}, 60_000);
beforeEach(() => {
  k = `k-${randomBytes(6).toString('hex')}`;
});
const worlds = new Map<Kind, Promise<World>>();
let shared: Promise<{ store: Store; url: string; admin: pg.Client; drop(): Promise<void> }> | undefined;
/** Each run's Redis keys have a prefix of their own, deleted at the end (they would expire anyway). */
const redisPrefixes: string[] = [];
afterAll(async () => {
  await pglite?.close();
  const database = await shared;
  await database?.drop();
  if (redisPrefixes.length > 0) {
    const redis = new Redis(REDIS_URL);
    for (const prefix of redisPrefixes) {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    redis.disconnect();
  }
});

function world(kind: Kind): Promise<World> {
  let opened = worlds.get(kind);
  if (opened === undefined) {
    opened = openWorld(kind);
    worlds.set(kind, opened);
  }
  return opened;
}

/** One database for the file, migrated once. */
function sharedDatabase() {
  shared ??= (async () => {
    const database = await createTestDatabase();
    const url = database.url!;
    const store = await openStore(database.target);
    await migrate(store);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    return {
      store,
      url,
      admin,
      drop: async () => {
        await admin.end();
        await store.close();
        await database.drop();
      },
    };
  })();
  return shared;
}

async function openWorld(kind: Kind): Promise<World> {
  if (kind === 'memory') {
    const store = pglite!;
    return {
      kind,
      store,
      replica: async (options) => track(openTailCluster({ store, replicaId: 'solo', ...options })),
    };
  }
  const { store, url, admin } = await sharedDatabase();
  const prefix = `berth:test:tail:${randomBytes(6).toString('hex')}:`;
  if (kind === 'redis') redisPrefixes.push(prefix);
  let replicas = 0;
  return {
    kind,
    store,
    url,
    admin,
    replica: async (options, via) => {
      replicas += 1;
      let replicaStore = store;
      if (via !== undefined && kind === 'postgres') {
        const proxied = await openStore({ kind: 'postgres', url: via.via(url) });
        cleanups.push(() => proxied.close());
        replicaStore = proxied;
      }
      const redis = kind === 'redis' ? { redisUrl: via?.via(REDIS_URL) ?? REDIS_URL, redisPrefix: prefix } : {};
      return track(openTailCluster({ store: replicaStore, ...redis, replicaId: `${kind}-${replicas}`, ...options }));
    },
  };
}

function track(cluster: { bus: TailBus; leases: TailLeases }) {
  cleanups.push(async () => {
    await cluster.bus.close();
    await cluster.leases.close();
  });
  return cluster;
}

async function proxyTo(url: string): Promise<DbProxy> {
  const u = new URL(url);
  const proxy = await startDbProxy({ host: u.hostname, port: Number(u.port) });
  cleanups.push(() => proxy.close());
  return proxy;
}

const buses = [
  { name: 'in process (PGlite)', kind: 'memory' as const, skip: false },
  { name: 'PostgreSQL', kind: 'postgres' as const, skip: !onPostgres },
  { name: 'Redis', kind: 'redis' as const, skip: !onPostgres || !redisUp },
];

describe.each(buses)('tail bus $name', ({ kind, skip }) => {
  it.skipIf(skip)(
    'delivers each entry published after the subscription once, in seq order, to every subscriber',
    async () => {
      const { bus } = await (await world(kind)).replica();
      expect(await bus.latest(k)).toBeUndefined();
      const one = watch(bus, k, BUS_START);
      const two = watch(bus, k, BUS_START);
      const other = watch(bus, `${k} other`, BUS_START);
      const seqs = await Promise.all(Array.from({ length: 40 }, (_, i) => bus.publish(k, { i, text: `line ${i}` })));
      await until(() => one.entries.length >= 40 && two.entries.length >= 40, 'delivered');
      await sleep(100);
      for (const seen of [one, two]) {
        expect(seen.gaps).toBe(0);
        expect(seen.entries.map((e) => e.seq)).toEqual([...seqs].sort());
        expect(isIncreasing(seen.entries.map((e) => e.seq))).toBe(true);
        const bySeq = new Map(seqs.map((seq, i) => [seq, i]));
        for (const entry of seen.entries)
          expect(entry.payload).toEqual({ i: bySeq.get(entry.seq), text: `line ${bySeq.get(entry.seq)}` });
      }
      expect(other.entries).toEqual([]);
      expect(await bus.latest(k)).toBe([...seqs].sort().at(-1));
    },
  );

  it.skipIf(skip)('replays the entries after afterSeq, then goes on live; undefined starts at the newest', async () => {
    const { bus } = await (await world(kind)).replica();
    const seqs: string[] = [];
    for (let i = 0; i < 5; i++) seqs.push(await bus.publish(k, i));
    const replay = watch(bus, k, seqs[1]);
    const all = watch(bus, k, BUS_START);
    const fromNow = watch(bus, k, undefined);
    await until(() => replay.entries.length === 3 && all.entries.length === 5, 'replayed');
    // "From now" is set by the bus's first read of the key (a round trip away on a database).
    await sleep(300);
    seqs.push(await bus.publish(k, 5));
    await until(() => replay.entries.length === 4 && fromNow.entries.length === 1, 'live');
    await until(() => all.entries.length === 6, 'live to the other');
    expect(replay.entries.map((e) => e.payload)).toEqual([2, 3, 4, 5]);
    expect(all.entries.map((e) => e.seq)).toEqual(seqs);
    expect(fromNow.entries.map((e) => e.payload)).toEqual([5]);
    expect([replay.gaps, all.gaps, fromNow.gaps]).toEqual([0, 0, 0]);
  });

  it.skipIf(skip)(
    'stops delivering after the unsubscribe, and keeps delivering to others when one throws',
    async () => {
      const { bus } = await (await world(kind)).replica();
      const stopped = watch(bus, k, BUS_START);
      bus.subscribe(
        k,
        BUS_START,
        () => {
          throw new Error('subscriber bug');
        },
        () => undefined,
      );
      const kept = watch(bus, k, BUS_START);
      await bus.publish(k, 'a');
      await until(() => stopped.entries.length === 1 && kept.entries.length === 1, 'first delivered');
      stopped.stop();
      await bus.publish(k, 'b');
      await until(() => kept.entries.length === 2, 'second delivered');
      await sleep(100);
      expect(stopped.entries.map((e) => e.payload)).toEqual(['a']);
    },
  );

  it.skipIf(skip)(
    'tells a subscriber whose entries were trimmed by count, then delivers from the oldest kept',
    async () => {
      const { bus } = await (await world(kind)).replica({ bufferRows: 5 });
      const seqs: string[] = [];
      for (let i = 0; i < 12; i++) seqs.push(await bus.publish(k, i));
      // PostgreSQL trims by count once a second.
      if (kind === 'postgres') await sleep(1_500);
      const late = watch(bus, k, seqs[2]);
      const fresh = watch(bus, k, BUS_START);
      await until(() => late.entries.length >= 5 && fresh.entries.length >= 5, 'kept entries delivered');
      expect(late.events[0]).toBe('gap');
      expect(late.gaps).toBe(1);
      expect(late.entries.map((e) => e.payload)).toEqual([7, 8, 9, 10, 11]);
      expect(fresh.gaps).toBe(0);
      expect(fresh.entries.map((e) => e.payload)).toEqual([7, 8, 9, 10, 11]);
      await bus.publish(k, 12);
      await until(() => late.entries.length === 6, 'live after the gap');
      expect(late.gaps).toBe(1);
    },
  );

  it.skipIf(skip)('tells a subscriber whose entries aged out of the buffer', async () => {
    const { bus } = await (await world(kind)).replica({ bufferMs: 200 });
    const cursor = await bus.publish(k, 'seen');
    await bus.publish(k, 'aged out');
    // In memory and on Redis the next publish trims by age; on PostgreSQL a pass once the bus is in use.
    await sleep(kind === 'postgres' ? 1_300 : 300);
    if (kind !== 'postgres') await bus.publish(k, 'new');
    const late = watch(bus, k, cursor);
    await until(() => late.gaps === 1, 'told of the gap');
    if (kind === 'postgres') await bus.publish(k, 'new');
    await until(() => late.entries.length === 1, 'the entry after the gap');
    expect(late.events).toEqual(['gap', late.entries[0]!.seq]);
    expect(late.entries.map((e) => e.payload)).toEqual(['new']);
  });

  it.skipIf(skip)('treats an afterSeq this bus never issues as a gap and delivers what is kept', async () => {
    const { bus } = await (await world(kind)).replica();
    await bus.publish(k, 'kept');
    const seen = watch(bus, k, 'not a seq');
    await until(() => seen.entries.length === 1, 'delivered');
    expect(seen.events[0]).toBe('gap');
    expect(seen.entries.map((e) => e.payload)).toEqual(['kept']);
  });

  it.skipIf(skip)('gives a key to one holder at a time, and to another once released', async () => {
    const w = await world(kind);
    const a = await w.replica();
    const b = kind === 'memory' ? a : await w.replica();
    const lease = await a.leases.tryAcquire(k);
    expect(lease?.key).toBe(k);
    expect(await a.leases.tryAcquire(k)).toBeUndefined();
    expect(await b.leases.tryAcquire(k)).toBeUndefined();
    expect(a.leases.held).toBe(1);
    const other = await b.leases.tryAcquire(`${k} other`);
    expect(other).toBeDefined();
    await lease!.release();
    expect(lease!.lost.aborted).toBe(true);
    expect(a.leases.held).toBe(kind === 'memory' ? 1 : 0);
    const next = await b.leases.tryAcquire(k);
    expect(next).toBeDefined();
    expect(next!.lost.aborted).toBe(false);
    await lease!.release();
    expect(await a.leases.tryAcquire(k)).toBeUndefined();
  });
});

const clusters = buses.filter((b) => b.kind !== 'memory');

describe.each(clusters)('tail cluster on $name', ({ kind, skip }) => {
  it.skipIf(skip)('delivers every entry of one replica to every subscriber of both, once and in order', async () => {
    const w = await world(kind);
    const a = await w.replica();
    const b = await w.replica();
    const start = (await a.bus.latest(k)) ?? BUS_START;
    const seen = [watch(a.bus, k, start), watch(a.bus, k, start), watch(b.bus, k, start), watch(b.bus, k, start)];
    const seqs: string[] = [];
    for (let round = 0; round < 5; round++) {
      seqs.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => a.bus.publish(k, round * 20 + i)))));
    }
    await until(() => seen.every((s) => s.entries.length >= 100), 'delivered everywhere');
    await sleep(200);
    for (const s of seen) {
      expect(s.gaps).toBe(0);
      expect(s.entries.map((e) => e.seq)).toEqual([...seqs].sort());
    }
    expect(await b.bus.latest(k)).toBe([...seqs].sort().at(-1));
  });

  it.skipIf(skip)(
    'tells a replica cut off from the bus of the entries trimmed meanwhile, once it is back',
    async () => {
      const w = await world(kind);
      const proxy = await proxyTo(kind === 'postgres' ? w.url! : REDIS_URL);
      const publisher = await w.replica({ bufferRows: 5 });
      const cutOff = await w.replica({ bufferRows: 5 }, proxy);
      const seen = watch(cutOff.bus, k, BUS_START);
      await publisher.bus.publish(k, 0);
      await until(() => seen.entries.length === 1, 'first entry');
      await proxy.cut('refuse');
      // A publish through the cut connection fails; the process goes on.
      const failed = cutOff.bus.publish(k, 'lost');
      await expect(failed).rejects.toThrow();
      if (kind === 'postgres') await expect(failed).rejects.toBeInstanceOf(DatabaseUnavailableError);
      for (let i = 1; i <= 12; i++) await publisher.bus.publish(k, i);
      if (kind === 'postgres') await sleep(1_500);
      await proxy.restore();
      await until(() => seen.entries.length >= 6, 'delivery resumed', 10_000);
      expect(seen.events[1]).toBe('gap');
      expect(seen.entries.map((e) => e.payload)).toEqual([0, 8, 9, 10, 11, 12]);
    },
  );
});

describe.skipIf(!onPostgres)('tail leases on PostgreSQL', () => {
  it('frees the key of a holder that stopped renewing within ttl and a renewal period, after its lost fired', async () => {
    const w = await world('postgres');
    const proxy = await proxyTo(w.url!);
    const ttl = 1_500;
    const holder = await w.replica({ leaseTtlMs: ttl }, proxy);
    const other = await w.replica({ leaseTtlMs: ttl });
    const lease = await holder.leases.tryAcquire(k);
    expect(lease).toBeDefined();
    let lostAt = Number.POSITIVE_INFINITY;
    lease!.lost.addEventListener('abort', () => {
      lostAt = Date.now();
    });
    // Renewed past its first ttl.
    await sleep(ttl + 200);
    expect(await other.leases.tryAcquire(k)).toBeUndefined();
    expect(lease!.lost.aborted).toBe(false);
    // The holder's network goes silent, like a process stopped dead (kill -9 frees the same way).
    proxy.stall();
    const stalledAt = Date.now();
    let taken: Lease | undefined;
    while (taken === undefined) {
      if (Date.now() - stalledAt > 3 * ttl) throw new Error('not taken over');
      taken = await other.leases.tryAcquire(k);
      if (taken === undefined) await sleep(50);
    }
    const takenAt = Date.now();
    // The row expires at most ttl after the last renewal, which ran before the stall; slack for a loaded machine.
    expect(takenAt - stalledAt).toBeLessThan(ttl + ttl / 3 + 700);
    // The old holder stopped first: its deadline, by its own clock, comes before the row expires.
    await until(() => lease!.lost.aborted, 'lost', 1_000);
    expect(lostAt).toBeLessThanOrEqual(takenAt + 50);
    expect(String(lease!.lost.reason)).toMatch(/not renewed/);
    expect(holder.leases.held).toBe(0);
    await proxy.restore();
  });

  it('aborts lost when the lease row is taken or has expired', async () => {
    const w = await world('postgres');
    const { leases } = await w.replica({ leaseTtlMs: 1_200 });
    const taken = await leases.tryAcquire(`${k} taken`);
    const expired = await leases.tryAcquire(`${k} expired`);
    await w.admin!.query(`update tail_leases set token = 'someone else' where key_hash = $1`, [keyHash(`${k} taken`)]);
    await w.admin!.query(`update tail_leases set expires_at = now() - interval '1 second' where key_hash = $1`, [
      keyHash(`${k} expired`),
    ]);
    await until(() => taken!.lost.aborted && expired!.lost.aborted, 'lost', 2_000);
    expect(String(taken!.lost.reason)).toMatch(/taken over or expired/);
    expect(leases.held).toBe(0);
    // Released after it was lost: the row of whoever holds it now stays.
    await taken!.release();
    const { rows } = await w.admin!.query(`select token from tail_leases where key_hash = $1`, [keyHash(`${k} taken`)]);
    expect(rows).toEqual([{ token: 'someone else' }]);
  });
});

describe.skipIf(!onPostgres)('tail bus on PostgreSQL, without its notifications', () => {
  it('delivers an entry whose notification was never sent within the catch-up period', async () => {
    const w = await world('postgres');
    const { bus } = await w.replica();
    const seen = watch(bus, k, BUS_START);
    await sleep(100);
    const sentAt = Date.now();
    await w.admin!.query(`insert into tail_buffer (key_hash, payload) values ($1, '"quiet"')`, [keyHash(k)]);
    await until(() => seen.entries.length === 1, 'delivered', 3_000);
    expect(Date.now() - sentAt).toBeLessThan(2_000);
    expect(seen.entries[0]!.payload).toBe('quiet');
  });

  it('listens again after its connection is killed, and delivers what came meanwhile', async () => {
    const w = await world('postgres');
    const publisher = await w.replica();
    const listener = await w.replica({ replicaId: `listener ${k}` });
    const seen = watch(listener.bus, k, BUS_START);
    await publisher.bus.publish(k, 1);
    await until(() => seen.entries.length === 1, 'first delivered');
    const listeners = (what: string) =>
      w.admin!.query(
        `select ${what} from pg_stat_activity where application_name = $1 and datname = current_database()`,
        [`berth-tail-listener listener ${k}`],
      );
    const { rows } = await listeners('pg_terminate_backend(pid) as ended');
    expect(rows).toEqual([{ ended: true }]);
    await publisher.bus.publish(k, 2);
    await publisher.bus.publish(k, 3);
    await until(() => seen.entries.length === 3, 'delivered after the reconnect');
    expect(seen.entries.map((e) => e.payload)).toEqual([1, 2, 3]);
    let back = false;
    for (let i = 0; i < 50 && !back; i++) {
      back = (await listeners('pid')).rows.length === 1;
      if (!back) await sleep(100);
    }
    expect(back).toBe(true);
  });
});
