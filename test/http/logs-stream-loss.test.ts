// GET /cloud/logs/stream on `local` accounts loses nothing and repeats nothing: a burst larger than
// STREAM_BATCH_SIZE resumes from any message's id, a transaction that commits long after it took its
// `seq` is still delivered once (PostgreSQL), and the tail cursor (transaction ids and a snapshot's
// in-progress list) stays exact through truncated reads, partial deliveries and compact/restore.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertLocalEvents } from '../../src/store/log-ingest/events.js';
import type { CloudAccount } from '../../src/core/log-query/types.js';
import { LocalStreamSource, type LocalCursor } from '../../src/providers/local/log-stream/source.js';
import { encodeEventId } from '../../src/services/log-stream/resume-id.js';
import { predicateFilter, type MessageFilter, type StreamQuery } from '../../src/providers/log-stream/port.js';
import type { StreamSelector } from '../../src/core/log-query/types.js';
import type { Tables } from '../../src/store/schema.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const REGION = 'eu-west-1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const never = new AbortController().signal;

let t: TestApp;
const readers: SseReader[] = [];

beforeAll(async () => {
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: 'acc-a', organizationId: ORG_A, provider: 'local', region: REGION }],
    }),
    // Twelve tails of one principal in the multi-key case.
    config: { STREAM_POLL_INTERVAL_MS: 50, STREAM_BATCH_SIZE: 500, STREAM_MAX_PER_PRINCIPAL: 20 },
  });
});
afterAll(async () => {
  for (const r of readers.splice(0)) r.close();
  await t?.close();
});

async function ingest(logGroup: string, messages: string[]): Promise<void> {
  const res = await t.request('POST', '/cloud/logs/local/events', {
    token: TOKENS.admin,
    body: {
      accountId: 'acc-a',
      region: REGION,
      logGroup,
      logStream: 's/1',
      events: messages.map((message) => ({ message })),
    },
  });
  expect(res.status, res.text).toBe(202);
}

async function ingestTo(logGroup: string, logStream: string, messages: string[]): Promise<void> {
  const res = await t.request('POST', '/cloud/logs/local/events', {
    token: TOKENS.admin,
    body: { accountId: 'acc-a', region: REGION, logGroup, logStream, events: messages.map((message) => ({ message })) },
  });
  expect(res.status, res.text).toBe(202);
}

async function open(params: Record<string, string | boolean>, lastEventId?: string): Promise<SseReader> {
  const r = await openSse(
    t.url,
    TOKENS.owner,
    { accountId: 'acc-a', logStreamPrefix: 's/', ...params },
    lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
  );
  expect(r.res.status).toBe(200);
  readers.push(r);
  return r;
}

async function untilTailing(): Promise<void> {
  const hub = t.services.streams.hub;
  const deadline = Date.now() + 5_000;
  while (hub.activePollers === 0) {
    if (Date.now() > deadline) throw new Error('the tail did not start');
    await sleep(10);
  }
  const polls = hub.polls;
  while (hub.polls < polls + 1) await sleep(10);
}

const texts = (events: { message: string }[]) => events.map((e) => e.message);
const burst = (tag: string) => Array.from({ length: 1_200 }, (_, i) => `${tag} ${i}`);

describe('a burst larger than STREAM_BATCH_SIZE (500)', () => {
  it('history: each message resumes right after its own events', async () => {
    const group = '/loss/history';
    const all = burst('h');
    await ingest(group, all);
    const s = await open({ logGroups: group });
    expect(texts(await s.events(1_200))).toEqual(all);
    const messages = s.messages();
    expect(messages.map((m) => m.data.events.length)).toEqual([500, 500, 200]);
    for (const [i, from] of [
      [0, 500],
      [1, 1_000],
    ] as const) {
      const again = await open({ logGroups: group }, messages[i]!.id);
      expect(texts(await again.events(Infinity))).toEqual(all.slice(from));
      again.close();
    }
  });

  it('tail: one poll that reads 1,200 events sends three messages, each resuming right after its own events', async () => {
    const group = '/loss/tail';
    const s = await open({ logGroups: group, tail: true });
    await untilTailing();
    const all = burst('t');
    // One statement, so one poll reads all 1,200 (the ingest route commits in chunks of about DB_SLICE_MS).
    await insertLocalEvents(
      t.store.db,
      all.map((message) => ({
        cloudAccountId: 'acc-a',
        region: REGION,
        logGroup: group,
        logStream: 's/1',
        timestamp: Date.now(),
        message,
      })),
    );
    expect(texts(await s.events(1_200))).toEqual(all);
    const messages = s.messages();
    expect(messages.map((m) => m.data.events.length)).toEqual([500, 500, 200]);
    expect(new Set(messages.map((m) => m.id)).size).toBe(3);
    s.close();
    for (const [i, from] of [
      [0, 500],
      [1, 1_000],
      [2, 1_200],
    ] as const) {
      const again = await open({ logGroups: group, tail: true }, messages[i]!.id);
      const rest = all.slice(from);
      expect(texts(await again.events(rest.length))).toEqual(rest);
      // Nothing repeated after it: the next event is the next one written.
      await ingest(group, [`sentinel ${i}`]);
      expect(texts(await again.events(1))).toEqual([`sentinel ${i}`]);
      again.close();
      all.push(`sentinel ${i}`);
    }
  });
});

describe('tails of one account with different stream prefixes, written concurrently', () => {
  it('are read together (one read per interval for all), and every subscriber gets exactly its own events once, in order', async () => {
    const group = '/loss/together';
    const hub = t.services.streams.hub;
    const keys = Array.from({ length: 10 }, (_, k) => `k${k}/`);
    // Ten keys (ten prefixes), three subscribers on the first, one key with a pattern as well: 12 streams, 11 keys.
    const subscribers = [
      ...keys.map((prefix) => ({ prefix, pattern: '' })),
      { prefix: 'k0/', pattern: '' },
      { prefix: 'k0/', pattern: '' },
      { prefix: 'k3/', pattern: '-odd' },
    ];
    const opened = await Promise.all(
      subscribers.map((sub) =>
        open({
          logGroups: group,
          logStreamPrefix: sub.prefix,
          tail: true,
          ...(sub.pattern === '' ? {} : { filterPattern: sub.pattern }),
        }),
      ),
    );
    const deadline = Date.now() + 5_000;
    while (hub.activePollers < 11) {
      if (Date.now() > deadline) throw new Error('the tails did not start');
      await sleep(10);
    }
    await untilTailing();
    const reads0 = hub.reads;
    const polls0 = hub.polls;
    // Three writers at once, each posting batches to streams of random keys.
    const rnd = random(2_025);
    const written: { stream: string; message: string }[] = [];
    await Promise.all(
      [0, 1, 2].map(async (w) => {
        for (let i = 0; i < 12; i++) {
          const stream = `k${Math.floor(rnd() * 10)}/w${w}`;
          const messages = Array.from(
            { length: 1 + Math.floor(rnd() * 30) },
            (_, j) => `${stream} ${i}.${j} ${rnd() < 0.3 ? 'odd' : 'even'}`,
          );
          const res = await t.request('POST', '/cloud/logs/local/events', {
            token: TOKENS.admin,
            body: {
              accountId: 'acc-a',
              region: REGION,
              logGroup: group,
              logStream: stream,
              events: messages.map((message) => ({ message })),
            },
          });
          expect(res.status, res.text).toBe(202);
          for (const message of messages) written.push({ stream, message });
        }
      }),
    );
    const wanted = subscribers.map((sub) =>
      written
        .filter((e) => e.stream.startsWith(sub.prefix) && !(sub.pattern === '-odd' && e.message.includes('odd')))
        .map((e) => e.message),
    );
    const got = await Promise.all(opened.map(async (r, i) => texts(await r.events(wanted[i]!.length))));
    for (const [i, messages] of got.entries()) {
      expect(sorted(messages), `subscriber ${i}`).toEqual(sorted(wanted[i]!));
      // Each writer's events of a stream arrive in the order it wrote them.
      for (const w of [0, 1, 2]) {
        const mine = (m: string) => m.startsWith(subscribers[i]!.prefix) && m.includes(`/w${w} `);
        expect(messages.filter(mine)).toEqual(wanted[i]!.filter(mine));
      }
    }
    // One read of the account served every key: the keys' reads (polls) far outnumber the reads made.
    expect(hub.activeGroups).toBe(1);
    const reads = hub.reads - reads0;
    expect(reads).toBeGreaterThan(0);
    expect(hub.polls - polls0).toBeGreaterThanOrEqual(5 * reads);
    // Nothing repeated after them: the next event of each key is the sentinel written after everything.
    for (const prefix of keys) await ingestTo(group, `${prefix}sentinel`, [`sentinel ${prefix}`]);
    for (const [i, r] of opened.entries()) {
      expect(texts(await r.events(1)), `subscriber ${i}`).toEqual([`sentinel ${subscribers[i]!.prefix}`]);
      r.close();
    }
  }, 60_000);
});

describe.skipIf(!onPostgres)('a transaction that commits long after it took its seq (PostgreSQL)', () => {
  it('is delivered by the tail exactly once, whether it began before the stream or during the tail', async () => {
    const group = '/loss/late-commit';
    const other = new Kysely<Tables>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.database.url, max: 2 }) }),
    });
    const event = (message: string) => ({
      cloudAccountId: 'acc-a',
      region: REGION,
      logGroup: group,
      logStream: 's/1',
      timestamp: Date.now(),
      message,
    });
    /** Inserts in its own transaction and holds it open until `commit()`. */
    const openTransaction = async (message: string) => {
      let commit!: () => void;
      const gate = new Promise<void>((resolve) => (commit = resolve));
      let inserted!: () => void;
      const done = new Promise<void>((resolve) => (inserted = resolve));
      const finished = other.transaction().execute(async (trx) => {
        await insertLocalEvents(trx, [event(message)]);
        inserted();
        await gate;
      });
      await done;
      return { commit: () => (commit(), finished) };
    };
    try {
      const early = await openTransaction('late, begun before the stream');
      await ingest(group, ['history']);
      const s = await open({ logGroups: group, tail: true });
      expect(texts(await s.events(1))).toEqual(['history']);
      await untilTailing();
      const during = await openTransaction('late, begun during the tail');
      // Well past the old 2 s grace: the tail keeps polling, other events are written and delivered.
      for (let i = 0; i < 7; i++) {
        await ingest(group, [`live ${i}`]);
        expect(texts(await s.events(1))).toEqual([`live ${i}`]);
        await sleep(450);
      }
      await early.commit();
      await during.commit();
      expect(texts(await s.events(2)).sort()).toEqual(['late, begun before the stream', 'late, begun during the tail']);
      const polls = t.services.streams.hub.polls;
      while (t.services.streams.hub.polls < polls + 3) await sleep(10);
      await ingest(group, ['sentinel']);
      expect(texts(await s.events(1))).toEqual(['sentinel']);
      s.close();
    } finally {
      await other.destroy();
    }
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------------------------
// The source itself: small reads and deliveries, every intermediate cursor compacted and restored.

const account: CloudAccount = {
  id: 'acc-a',
  organizationId: ORG_A,
  provider: 'local',
  region: REGION,
  roleArn: null,
  externalId: null,
  endpoint: null,
};
const query = (group: string): StreamQuery => ({
  account,
  region: REGION,
  logGroups: [group],
  streams: { kind: 'prefix', prefix: '' },
  pattern: '-skip',
  filter: predicateFilter((m) => !m.includes('skip')),
});

/** A seeded pseudo-random sequence (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A subscriber as TailHub drives it: one read, then deliveries of at most `limit` events; after every
 * delivery the compact form of its cursor (what the SSE id carries) is kept with what was delivered so far.
 */
class Tailer {
  delivered: string[] = [];
  ids: { compact: unknown; count: number }[] = [];
  /** Cursors seen with entries (transactions in progress), and with partly taken ones. */
  withEntries = 0;
  withPartEntries = 0;
  /** The last read reached the end (did not stop at its budget: a read may stop having found nothing). */
  complete = true;
  constructor(
    readonly src: LocalStreamSource,
    readonly q: StreamQuery,
    public cursor: LocalCursor,
    readonly limit: number,
  ) {}
  async poll(): Promise<number> {
    const batch = await this.src.read(this.q, [this.cursor], never);
    this.complete = (batch as { last?: unknown }).last === undefined;
    let n = 0;
    for (let more = true; more; ) {
      const step = this.src.advance(this.cursor, batch, 0, this.limit);
      expect(step.events.length).toBeLessThanOrEqual(this.limit);
      this.cursor = step.cursor;
      if (step.cursor.inProgress.length > 0) this.withEntries++;
      if (step.cursor.inProgress.some(([, a]) => a > 0)) this.withPartEntries++;
      this.delivered.push(...step.events.map((e) => e.message));
      n += step.events.length;
      if (step.events.length > 0) {
        const compact = JSON.parse(JSON.stringify(this.src.compact(step.cursor))) as unknown;
        expect(encodeEventId({ p: 't', c: compact }).length).toBeLessThan(4_096);
        this.ids.push({ compact, count: this.delivered.length });
      }
      more = step.more === true && step.events.length > 0;
    }
    return n;
  }
  /** Polls until a complete poll finds nothing. */
  async drain(): Promise<void> {
    while ((await this.poll()) > 0 || !this.complete);
  }
}

const sorted = (xs: string[]) => [...xs].sort();

/** Every id resumes with exactly what was delivered after it. */
async function expectEveryIdResumes(
  tailer: Tailer,
  src: LocalStreamSource,
  q: StreamQuery,
  pick: (i: number) => boolean,
): Promise<void> {
  for (const [i, id] of tailer.ids.entries()) {
    if (!pick(i)) continue;
    const cursor = src.restore(id.compact);
    expect(cursor, `id ${i} restores`).toBeDefined();
    const resumed = new Tailer(src, q, cursor!, 1_000);
    await resumed.drain();
    expect(sorted(resumed.delivered), `resumed from id ${i}`).toEqual(sorted(tailer.delivered.slice(id.count)));
  }
}

describe('LocalStreamSource tail cursor', () => {
  it('reads in small parts (truncated reads, partial deliveries) without loss or repeat; every id resumes exactly', async () => {
    const group = '/loss/source-sequential';
    const q = query(group);
    const src = new LocalStreamSource(t.store.db, { readLimit: 7 });
    await ingest(group, ['before the tail']);
    const tailer = new Tailer(src, q, await src.tailStart(q, never), 3);
    const written: string[] = [];
    const rnd = random(7);
    let n = 0;
    for (let round = 0; round < 12; round++) {
      // A few transactions of several rows each (some the pattern drops), then a poll.
      for (let k = Math.floor(rnd() * 3); k >= 0; k--) {
        const rows = Array.from({ length: 1 + Math.floor(rnd() * 9) }, () =>
          rnd() < 0.2 ? `skip ${n++}` : `m ${n++}`,
        );
        await t.store.db.transaction().execute(async (trx) => {
          for (let i = 0; i < rows.length; i += 4) {
            await insertLocalEvents(
              trx,
              rows.slice(i, i + 4).map((message) => ({
                cloudAccountId: 'acc-a',
                region: REGION,
                logGroup: group,
                logStream: 's/1',
                timestamp: 1_000 + n,
                message,
              })),
            );
          }
        });
        written.push(...rows.filter((m) => !m.includes('skip')));
      }
      await tailer.poll();
    }
    await tailer.drain();
    expect(tailer.delivered).toEqual(written);
    expect(tailer.ids.length).toBeGreaterThan(10);
    await expectEveryIdResumes(tailer, src, q, () => true);
  });

  it.skipIf(!onPostgres)(
    'stays exact with concurrent transactions committing and rolling back out of order (PostgreSQL)',
    async () => {
      const group = '/loss/source-concurrent';
      const q = query(group);
      const src = new LocalStreamSource(t.store.db, { readLimit: 5 });
      const clients = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const c = new pg.Client({ connectionString: t.database.url });
          await c.connect();
          return c;
        }),
      );
      try {
        const insert = (c: pg.Client | pg.Pool, message: string) =>
          c.query(
            `insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level)
             values ('acc-a', $1, $2, 's/1', 1000, 1000, $3, $3, 'INFO')`,
            [REGION, group, message],
          );
        const rnd = random(42);
        const open = new Map<pg.Client, string[]>();
        const committed: string[] = [];
        let n = 0;
        // One transaction is open before the tail starts and commits in the middle.
        await clients[0]!.query('begin');
        for (let i = 0; i < 3; i++) await insert(clients[0]!, `early ${n++}`);
        open.set(clients[0]!, ['early 0', 'early 1', 'early 2']);
        const tailer = new Tailer(src, q, await src.tailStart(q, never), 2);
        const autocommit = clients[5]!;
        for (let step = 0; step < 160; step++) {
          const r = rnd();
          const c = clients[Math.floor(rnd() * 5)]!;
          if (r < 0.35) {
            if (!open.has(c)) {
              await c.query('begin');
              open.set(c, []);
            }
            const message = `m ${n++}`;
            await insert(c, message);
            open.get(c)!.push(message);
          } else if (r < 0.5 && open.has(c)) {
            await c.query('commit');
            committed.push(...open.get(c)!);
            open.delete(c);
          } else if (r < 0.55 && open.has(c)) {
            await c.query('rollback');
            open.delete(c);
          } else if (r < 0.65) {
            const message = `auto ${n++}`;
            await insert(autocommit, message);
            committed.push(message);
          } else {
            await tailer.poll();
          }
        }
        for (const [c, rows] of open) {
          await c.query('commit');
          committed.push(...rows);
        }
        await tailer.drain();
        expect(sorted(tailer.delivered)).toEqual(sorted(committed));
        expect(new Set(tailer.delivered).size).toBe(tailer.delivered.length);
        expect(tailer.ids.length).toBeGreaterThan(20);
        // The schedule did exercise transactions in progress, and ones taken in parts.
        expect(tailer.withEntries).toBeGreaterThan(5);
        expect(tailer.withPartEntries).toBeGreaterThan(0);
        await expectEveryIdResumes(tailer, src, q, (i) => i % 3 === 0);
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }
    },
    60_000,
  );

  it('compacts a cursor with too many in-progress transactions to a safe superset that fits an SSE id', async () => {
    const group = '/loss/source-compact';
    const q = query(group);
    const src = new LocalStreamSource(t.store.db);
    const start = await src.tailStart(q, never);
    const x = BigInt(start.xid);
    // 2,000 transactions in progress (as a busy server could have): far more than an SSE id holds.
    const crowded: LocalCursor = {
      xid: String(x + 5_000n),
      seq: 0,
      inProgress: Array.from({ length: 2_000 }, (_, i) => [String(x + 2n * BigInt(i)), 0] as [string, number]),
    };
    const compact = src.compact(crowded);
    expect(encodeEventId({ p: 't', c: compact }).length).toBeLessThan(4_096);
    const restored = src.restore(JSON.parse(JSON.stringify(compact)))!;
    // Everything the crowded cursor has still ahead of it is ahead of the restored one (it may hold more).
    expect(restored.inProgress).toEqual([]);
    expect(BigInt(restored.xid)).toBeLessThanOrEqual(x);
    // A small cursor round-trips whole.
    const small: LocalCursor = {
      xid: String(x + 10n),
      seq: 3,
      inProgress: [
        [String(x), 0],
        [String(x + 4n), 17],
      ],
    };
    expect(src.restore(JSON.parse(JSON.stringify(src.compact(small))))).toEqual(small);
    for (const bad of [
      undefined,
      null,
      'x',
      { l: 5 },
      { x: '-1', s: 0 },
      { x: '01', s: 0 },
      { x: '1', s: -1 },
      { x: '1', s: 0, i: [5] },
      { x: '99999999999999999999999', s: 0 },
    ]) {
      expect(src.restore(bad)).toBeUndefined();
    }
    await sql`select 1`.execute(t.store.db);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Several keys of one account read together (`readTogether`, as TailHub reads them): each subscriber still gets
// exactly the rows of its own key, once, in key order, whatever the other keys' scopes and positions.

/** A filter that counts its calls: `select` must run once per key per read. */
function countedFilter(keep: (message: string) => boolean): MessageFilter & { calls: number } {
  const filter = {
    calls: 0,
    select: async <T>(items: readonly T[], message: (item: T) => string) => {
      filter.calls++;
      return items.filter((item) => keep(message(item)));
    },
  };
  return filter;
}

interface KeySpec {
  streams: StreamSelector;
  /** Messages containing it are dropped by the key's pattern. */
  drop?: string;
}

const keyQuery = (group: string, spec: KeySpec): StreamQuery => ({
  account,
  region: REGION,
  logGroups: [group],
  streams: spec.streams as StreamQuery['streams'],
  pattern: spec.drop === undefined ? '' : `-${spec.drop}`,
  filter: countedFilter((m) => spec.drop === undefined || !m.includes(spec.drop)),
});

const matches = (spec: KeySpec, stream: string, message: string) =>
  (spec.streams.kind === 'all' ||
    (spec.streams.kind === 'prefix' && stream.startsWith(spec.streams.prefix)) ||
    (spec.streams.kind === 'names' && spec.streams.names.includes(stream))) &&
  (spec.drop === undefined || !message.includes(spec.drop));

interface TogetherSub {
  key: number;
  cursor: LocalCursor;
  delivered: string[];
  /** Not ready: left out of reads (its cursor stays), as TailHub leaves out a congested client. */
  paused: boolean;
  /** The messages of its key's group that were there when it started (not its to get). */
  before: Set<string>;
}

/** Subscribers of several keys of one group, every poll one `readTogether` of the keys with a ready subscriber. */
class Together {
  readonly subs: TogetherSub[] = [];
  readonly queries: StreamQuery[];
  constructor(
    readonly src: LocalStreamSource,
    readonly group: string,
    readonly specs: KeySpec[],
    readonly limit: number,
  ) {
    this.queries = specs.map((spec) => keyQuery(group, spec));
  }

  async join(key: number): Promise<TogetherSub> {
    const cursor = await this.src.tailStart(this.queries[key]!, never);
    // Sequential test steps: nothing commits between the snapshot above and this read.
    const r = await sql<{ message: string }>`select message from log_events where log_group = ${this.group}`.execute(
      t.store.db,
    );
    const sub: TogetherSub = {
      key,
      cursor,
      delivered: [],
      paused: false,
      before: new Set(r.rows.map((x) => x.message)),
    };
    this.subs.push(sub);
    return sub;
  }

  /** One read of every key with a ready subscriber; returns events delivered and whether a lane stopped short. */
  async poll(): Promise<{ delivered: number; more: boolean; byKey: Map<number, number> }> {
    const keys = [...new Set(this.subs.filter((s) => !s.paused).map((s) => s.key))].map((key) => ({
      key,
      subs: this.subs.filter((s) => s.key === key && !s.paused),
    }));
    const calls = this.queries.map((q) => (q.filter as ReturnType<typeof countedFilter>).calls);
    const { batches, more } = await this.src.readTogether(
      keys.map((k) => ({ query: this.queries[k.key]!, cursors: k.subs.map((s) => s.cursor) })),
      never,
    );
    // Each key's pattern ran once, on its own rows; keys not read, never.
    for (const [i, q] of this.queries.entries()) {
      const read = keys.some((k) => k.key === i);
      expect((q.filter as ReturnType<typeof countedFilter>).calls - calls[i]!).toBe(read ? 1 : 0);
    }
    let delivered = 0;
    const byKey = new Map<number, number>();
    for (const [j, k] of keys.entries()) {
      const outcome = batches[j]!;
      if ('error' in outcome) throw outcome.error;
      for (const sub of k.subs) {
        for (let go = true; go; ) {
          const step = this.src.advance(sub.cursor, outcome.batch, 0, this.limit);
          expect(step.events.length).toBeLessThanOrEqual(this.limit);
          sub.cursor = step.cursor;
          sub.delivered.push(...step.events.map((e) => e.message));
          delivered += step.events.length;
          byKey.set(k.key, (byKey.get(k.key) ?? 0) + step.events.length);
          go = step.more && step.events.length > 0;
        }
      }
    }
    return { delivered, more, byKey };
  }

  /** Every subscriber ready, polled until a complete read delivers nothing. */
  async drain(): Promise<void> {
    for (const s of this.subs) s.paused = false;
    for (;;) {
      const { delivered, more } = await this.poll();
      if (delivered === 0 && !more) return;
    }
  }

  /** Each subscriber got exactly its key's rows written after it started, once, and in key (here: write) order. */
  expectExact(written: { stream: string; message: string }[], ordered: boolean): void {
    for (const [i, sub] of this.subs.entries()) {
      const want = written
        .filter((e) => !sub.before.has(e.message) && matches(this.specs[sub.key]!, e.stream, e.message))
        .map((e) => e.message);
      if (ordered) expect(sub.delivered, `subscriber ${i} of key ${sub.key}`).toEqual(want);
      else expect(sorted(sub.delivered), `subscriber ${i} of key ${sub.key}`).toEqual(sorted(want));
      expect(new Set(sub.delivered).size).toBe(sub.delivered.length);
    }
  }
}

/** Keys whose scopes overlap: two prefixes, a prefix with a pattern, names across prefixes, everything. */
const OVERLAPPING: KeySpec[] = [
  { streams: { kind: 'prefix', prefix: 'a/' } },
  { streams: { kind: 'prefix', prefix: 'b/' } },
  { streams: { kind: 'prefix', prefix: 'a/' }, drop: 'skip' },
  { streams: { kind: 'names', names: ['a/2', 'b/1'] } },
  { streams: { kind: 'prefix', prefix: '' } },
];
const STREAMS_WRITTEN = ['a/1', 'a/2', 'b/1', 'b/2', 'c/1'];

describe('LocalStreamSource tail cursor, several keys read together', () => {
  it('keeps every subscriber of every key exact through shared and separate lanes, paused clients and small reads', async () => {
    const group = '/loss/together-sequential';
    const src = new LocalStreamSource(t.store.db, { readLimit: 7 });
    const together = new Together(src, group, OVERLAPPING, 3);
    const written: { stream: string; message: string }[] = [];
    const rnd = random(11);
    let n = 0;
    const write = async () => {
      // A transaction of a few rows in random streams (some the patterns drop), and rows of another group.
      const rows = Array.from({ length: 1 + Math.floor(rnd() * 9) }, () => {
        const stream = STREAMS_WRITTEN[Math.floor(rnd() * STREAMS_WRITTEN.length)]!;
        return { stream, message: `${stream} ${rnd() < 0.2 ? 'skip' : 'm'} ${n++}` };
      });
      await t.store.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += 4) {
          await insertLocalEvents(
            trx,
            rows.slice(i, i + 4).flatMap((r) => [
              {
                cloudAccountId: 'acc-a',
                region: REGION,
                logGroup: group,
                logStream: r.stream,
                timestamp: 1_000 + n,
                message: r.message,
              },
              {
                cloudAccountId: 'acc-a',
                region: REGION,
                logGroup: `${group}/other`,
                logStream: r.stream,
                timestamp: 1_000 + n,
                message: `other ${r.message}`,
              },
            ]),
          );
        }
      });
      written.push(...rows);
    };
    await write();
    for (const key of [0, 1, 2]) await together.join(key);
    await together.join(0);
    let lanesApart = 0;
    for (let round = 0; round < 40; round++) {
      for (let k = Math.floor(rnd() * 3); k >= 0; k--) await write();
      // Now and then a subscriber stops reading or comes back, and a key starts (each at its own position).
      if (rnd() < 0.3) {
        const sub = together.subs[Math.floor(rnd() * together.subs.length)]!;
        sub.paused = !sub.paused;
      }
      if (round % 8 === 3) await together.join((Math.floor(round / 8) + 3) % OVERLAPPING.length);
      const lows = new Set(together.subs.filter((s) => !s.paused).map((s) => `${s.cursor.xid}:${s.cursor.seq}`));
      if (lows.size > 1) lanesApart++;
      await together.poll();
    }
    await together.drain();
    expect(together.subs.length).toBeGreaterThan(6);
    // The schedule did read keys at different positions in one read.
    expect(lanesApart).toBeGreaterThan(5);
    together.expectExact(written, true);
    // A subscriber's ids still resume exactly (one key read alone).
    for (const sub of together.subs.slice(0, 2)) {
      const restored = src.restore(JSON.parse(JSON.stringify(src.compact(sub.cursor))));
      expect(restored).toEqual(sub.cursor);
    }
  });

  it.skipIf(!onPostgres)(
    'stays exact for every key with concurrent transactions committing and rolling back out of order (PostgreSQL)',
    async () => {
      const group = '/loss/together-concurrent';
      const src = new LocalStreamSource(t.store.db, { readLimit: 5 });
      const together = new Together(src, group, OVERLAPPING, 2);
      const clients = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const c = new pg.Client({ connectionString: t.database.url });
          await c.connect();
          return c;
        }),
      );
      try {
        const insert = (c: pg.Client, stream: string, message: string) =>
          c.query(
            `insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level)
             values ('acc-a', $1, $2, $3, 1000, 1000, $4, $4, 'INFO')`,
            [REGION, group, stream, message],
          );
        const rnd = random(4_242);
        const open = new Map<pg.Client, { stream: string; message: string }[]>();
        const committed: { stream: string; message: string }[] = [];
        let n = 0;
        const row = () => {
          const stream = STREAMS_WRITTEN[Math.floor(rnd() * STREAMS_WRITTEN.length)]!;
          return { stream, message: `${stream} ${rnd() < 0.2 ? 'skip' : 'm'} ${n++}` };
        };
        // A transaction open before the first subscribers start, committing in the middle.
        await clients[0]!.query('begin');
        const early = [row(), row(), row()];
        for (const r of early) await insert(clients[0]!, r.stream, r.message);
        open.set(clients[0]!, early);
        for (const key of [0, 1, 2, 3]) await together.join(key);
        const autocommit = clients[5]!;
        for (let step = 0; step < 220; step++) {
          const r = rnd();
          const c = clients[Math.floor(rnd() * 5)]!;
          if (r < 0.35) {
            if (!open.has(c)) {
              await c.query('begin');
              open.set(c, []);
            }
            const x = row();
            await insert(c, x.stream, x.message);
            open.get(c)!.push(x);
          } else if (r < 0.5 && open.has(c)) {
            await c.query('commit');
            committed.push(...open.get(c)!);
            open.delete(c);
          } else if (r < 0.55 && open.has(c)) {
            await c.query('rollback');
            open.delete(c);
          } else if (r < 0.65) {
            const x = row();
            await insert(autocommit, x.stream, x.message);
            committed.push(x);
          } else if (r < 0.68) {
            const sub = together.subs[Math.floor(rnd() * together.subs.length)]!;
            sub.paused = !sub.paused;
          } else if (r < 0.7) {
            await together.join(Math.floor(rnd() * OVERLAPPING.length));
          } else {
            await together.poll();
          }
        }
        for (const [c, rows] of open) {
          await c.query('commit');
          committed.push(...rows);
        }
        await together.drain();
        // A subscriber that started while a transaction was open gets its rows when it commits, whenever that is
        // (`before` holds only what was committed when it started).
        together.expectExact(committed, false);
        expect(together.subs.length).toBeGreaterThan(5);
        expect(together.subs.some((s) => s.cursor.inProgress.length > 0 || s.delivered.length > 0)).toBe(true);
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }
    },
    60_000,
  );
});
