/**
 * Live tails of one local account: what 1 and 10 tails (each its own `logStreamPrefix`) cost the database, and what
 * they do to another tenant's statements (issue 20). Not part of `npm run bench`; run by hand:
 *
 *     npx tsx bench/tails-together.ts                       # this tree
 *     BERTH_ROOT=/path/to/other/tree npx tsx bench/tails-together.ts   # the same measurement of another tree
 *
 * Each run opens a fresh database (PGlite in memory; PostgreSQL from BENCH_DATABASE_URL / TEST_DATABASE_URL unless
 * `off`), seeds 50,000 events of the neighbour's account, subscribes the tails to a TailHub with the default
 * STREAM_POLL_INTERVAL_MS (1 s) and, for TAILS_SECONDS (default 8) seconds, either leaves them idle or writes 10
 * events every 20 ms into the tails' account, waking them as the change feed does (reads at most every 50 ms).
 * Meanwhile the neighbour (another organization) runs one small indexed statement every 10 ms. Reported per second
 * of the run: the reads and statements the tails made, the time during which a tail read was under way (a read
 * waiting for its turn counts: reads of separate keys overlap), and the neighbour's statement latency (p50, p99).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { KyselyPlugin } from 'kysely';
import pg from 'pg';
import { ADMIN_URL, postgresReachable } from './lib/postgres.js';

const ROOT = process.env.BERTH_ROOT ?? resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.TAILS_SECONDS ?? 8);
const REGION = 'eu-west-1';
const INTERVAL_MS = 1_000;

/** Modules of whichever tree BERTH_ROOT names. */
type Any = any;
const load = (path: string): Promise<Any> => import(`${ROOT}/src/${path}`);

interface Row {
  db: string;
  tails: number;
  mode: 'idle' | 'woken';
  readsPerS: number;
  statementsPerS: number;
  busyMsPerS: number;
  neighbourP50: number;
  neighbourP99: number;
  delivered: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freshPostgres(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  if (!(await postgresReachable())) return undefined;
  const name = `berth_tails_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

async function run(kind: 'pglite' | 'postgres', tails: number, mode: 'idle' | 'woken'): Promise<Row | undefined> {
  const [{ openStore }, { migrate }, { loadFixture }, { insertLocalEvents }, { LocalStreamSource }, { TailHub }] =
    await Promise.all([
      load('store/db.ts'),
      load('store/migrate.ts'),
      load('fixtures/load.ts'),
      load('store/log-ingest/events.ts'),
      load('providers/local/log-stream/source.ts'),
      load('services/log-stream/tail-hub.ts'),
    ]);
  const { runAsTenant } = await load('core/tenant-context.ts');
  const { sql } = await import('kysely');
  const pgdb = kind === 'postgres' ? await freshPostgres() : undefined;
  if (kind === 'postgres' && pgdb === undefined) return undefined;
  const store = await openStore(pgdb === undefined ? { kind: 'pglite' } : { kind: 'postgres', url: pgdb.url });
  try {
    await migrate(store);
    await loadFixture(store.db, {
      organizations: [
        { id: 'org-a', name: 'A', permittedIdentityProviders: [] },
        { id: 'org-b', name: 'B', permittedIdentityProviders: [] },
      ],
      cloudAccounts: [
        { id: 'acc-a', organizationId: 'org-a', provider: 'local', region: REGION },
        { id: 'acc-b', organizationId: 'org-b', provider: 'local', region: REGION },
      ],
    });
    const now = Date.now();
    for (let i = 0; i < 50_000; i += 5_000) {
      await insertLocalEvents(
        store.db,
        Array.from({ length: 5_000 }, (_, j) => ({
          cloudAccountId: 'acc-b',
          region: REGION,
          logGroup: '/b',
          logStream: `b/${j % 5}`,
          timestamp: now - 3_600_000 + i + j,
          message: `neighbour event ${i + j} ${'x'.repeat(100)}`,
        })),
      );
    }
    await sql`analyze log_events`.execute(store.db);

    let statements = 0;
    const plugin: KyselyPlugin = {
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const source = new LocalStreamSource(store.db.withPlugin(plugin));
    // Time the reads the hub makes (of the account's keys together where the tree can, else of each key): the time
    // during which at least one is under way. Reads of separate keys overlap (each waits for the database in turn),
    // so their own times would count the waits several times over.
    let readMs = 0;
    let reads = 0;
    let inFlight = 0;
    let busySince = 0;
    const method = typeof source.readTogether === 'function' ? 'readTogether' : 'read';
    const original = source[method];
    source[method] = async (...args: unknown[]) => {
      if (inFlight++ === 0) busySince = performance.now();
      try {
        return await original.apply(source, args);
      } finally {
        reads++;
        if (--inFlight === 0) readMs += performance.now() - busySince;
      }
    };
    /** Busy time so far, the read under way included. */
    const busy = () => readMs + (inFlight > 0 ? performance.now() - busySince : 0);
    const hub = new TailHub(INTERVAL_MS, { maxPerDelivery: 500 });
    let delivered = 0;
    const filter = { select: async (items: unknown[]) => [...items] };
    for (let k = 0; k < tails; k++) {
      const query = {
        account: {
          id: 'acc-a',
          organizationId: 'org-a',
          provider: 'local',
          region: REGION,
          roleArn: null,
          externalId: null,
          endpoint: null,
        },
        region: REGION,
        logGroups: ['/a'],
        streams: { kind: 'prefix', prefix: `p${k}/` },
        pattern: '',
        filter,
      };
      const sub = {
        cursor: await source.tailStart(query, new AbortController().signal),
        startMs: 0,
        ready: () => true,
        deliver: (events: unknown[]) => (delivered += events.length),
        fail: (error: unknown) => console.error('tail failed', error),
      };
      hub.subscribe(source, query, sub);
    }
    await sleep(INTERVAL_MS + 200);
    if (process.env.TAILS_DEBUG) console.error('subscribed');

    const t0 = performance.now();
    const base = { statements, busy: busy(), reads };
    const stop = t0 + SECONDS * 1_000;
    const latencies: number[] = [];
    const neighbour = (async () => {
      while (performance.now() < stop) {
        const started = performance.now();
        await runAsTenant({ organizationId: 'org-b' }, () =>
          sql`select max(timestamp) as t from log_events
            where cloud_account_id = 'acc-b' and region = ${REGION} and log_group = '/b'`.execute(store.db),
        );
        latencies.push(performance.now() - started);
        await sleep(10);
      }
    })();
    const writer = (async () => {
      if (mode !== 'woken') return;
      for (let n = 0; performance.now() < stop; n++) {
        await runAsTenant({ organizationId: 'org-a' }, () =>
          insertLocalEvents(
            store.db,
            Array.from({ length: 10 }, (_, j) => ({
              cloudAccountId: 'acc-a',
              region: REGION,
              logGroup: '/a',
              logStream: `p${(n + j) % 10}/s`,
              timestamp: Date.now(),
              message: `tail event ${n}.${j}`,
            })),
          ),
        );
        hub.wakeAccount('acc-a');
        await sleep(20);
      }
    })();
    const watch = process.env.TAILS_DEBUG
      ? setInterval(() => console.error('running', { reads, statements, probes: latencies.length }), 1_000)
      : undefined;
    await Promise.all([neighbour, writer]);
    clearInterval(watch);
    const seconds = (performance.now() - t0) / 1_000;
    const row: Row = {
      db: kind,
      tails,
      mode,
      readsPerS: (reads - base.reads) / seconds,
      statementsPerS: (statements - base.statements) / seconds,
      busyMsPerS: (busy() - base.busy) / seconds,
      neighbourP50: quantile(latencies, 0.5),
      neighbourP99: quantile(latencies, 0.99),
      delivered,
    };
    hub.close();
    // Reads under way when the hub closed finish before the store does.
    await sleep(1_000);
    return row;
  } finally {
    if (process.env.TAILS_DEBUG) console.error('closing the store');
    await store.close();
    if (process.env.TAILS_DEBUG) console.error('closed');
    await pgdb?.drop();
  }
}

/** TAILS_DB, TAILS_MODE, TAILS_N (comma-separated) pick some of the runs. */
const pick = <T extends string | number>(name: string, all: readonly T[]): T[] => {
  const given = process.env[name]?.split(',');
  return given === undefined ? [...all] : all.filter((x) => given.includes(String(x)));
};
const rows: Row[] = [];
for (const kind of pick('TAILS_DB', ['pglite', 'postgres'] as const)) {
  for (const mode of pick('TAILS_MODE', ['idle', 'woken'] as const)) {
    for (const tails of pick('TAILS_N', [1, 10])) {
      const row = await run(kind, tails, mode);
      if (row === undefined) continue;
      rows.push(row);
      console.log(
        [
          row.db.padEnd(8),
          `${String(row.tails).padStart(2)} tails`,
          row.mode.padEnd(5),
          `reads/s ${row.readsPerS.toFixed(1).padStart(6)}`,
          `statements/s ${row.statementsPerS.toFixed(1).padStart(6)}`,
          `tail read busy ms/s ${row.busyMsPerS.toFixed(1).padStart(6)}`,
          `neighbour p50 ${row.neighbourP50.toFixed(1).padStart(6)} ms`,
          `p99 ${row.neighbourP99.toFixed(1).padStart(6)} ms`,
          `events delivered ${row.delivered}`,
        ].join('  '),
      );
    }
  }
}
