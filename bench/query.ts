/**
 * `query`: p50/p99 of `POST /cloud/logs/logs-insights` (local provider) returning 1,000 and 10,000 rows,
 * with and without a filter, over 50 sources and 1,000,000 events, on PGlite and PostgreSQL.
 * Baselines in the same run: (a) the statement Berth runs for that request (compiled by Berth's own
 * local backend, and checked to return Berth's page), through the same driver, plus `JSON.stringify`
 * of its rows — target p50 ≤ 1.5× (a); (b) a bare `node:http` server answering the very bytes Berth
 * answered (reported). Berth is `berth serve` in a child process; requests come one at a time from
 * another (bench/lib/b-http-client.ts), interleaved with the baselines. The data set is seeded once
 * and kept (bench/lib/b-dataset.ts).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config.js';
import { parseFilter, planFilter, sqlCapabilities } from '../src/core/filter-tree/index.js';
import type { LogTarget } from '../src/core/log-query/types.js';
import { LocalLogBackend } from '../src/providers/local/log-query/backend.js';
import { databaseKinds, seedFixture, startBerth, type BenchDatabase, type DatabaseKind } from './lib/berth.js';
import { BENCH_ACCOUNT, BENCH_ORG, BENCH_REGION, BENCH_TOKEN, benchFixture } from './lib/b-fixture.js';
import { DATA_END_MS, DAY_MS, insertGeneratedEvents, keptDatabase, openBenchStore } from './lib/b-dataset.js';
import { startClient } from './lib/b-http-client.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';
import { median, quantile } from './lib/stats.js';

const NAME = 'query';
const progress = (message: string) => say(NAME, message);
const SOURCES = 50;
const EVENTS = scaled(1_000_000, 20_000);
const DATA_KEY = `query-v1 sources=${SOURCES} events=${EVENTS}`;
const WINDOW = { startTime: DATA_END_MS - DAY_MS, endTime: DATA_END_MS };
const ERROR_FILTER = { kind: 'level', levels: ['ERROR'] };
const WARMUP = 3;

interface Case {
  name: string;
  rows: number;
  filter?: unknown;
  /** `complete: true` instead of `limit`: every row of the window up to 10,000. */
  complete?: boolean;
  samples: number;
}
const CASES: Case[] = [
  { name: '1000-all', rows: 1000, samples: scaled(100, 20) },
  { name: '1000-error', rows: 1000, filter: ERROR_FILTER, samples: scaled(100, 20) },
  { name: '10000-all', rows: 10_000, samples: scaled(30, 8) },
  { name: '10000-error', rows: 10_000, filter: ERROR_FILTER, samples: scaled(30, 8) },
  { name: 'complete', rows: 10_000, complete: true, samples: scaled(30, 8) },
];
const describe = (c: Case) =>
  c.complete
    ? '`complete: true` (10,000 rows)'
    : `${c.rows.toLocaleString('en')} rows, ${c.filter ? 'level ERROR' : 'no filter'}`;

async function seed(db: BenchDatabase): Promise<void> {
  progress(`${db.kind}: seeding ${EVENTS.toLocaleString('en')} events over ${SOURCES} sources (kept for later runs)`);
  const t0 = performance.now();
  await seedFixture(
    db,
    benchFixture({
      projects: [{ id: 'bench-prj', organizationId: BENCH_ORG, name: 'Bench' }],
      environments: [{ id: 'bench-env', projectId: 'bench-prj', name: 'prod' }],
      moduleInstances: Array.from({ length: SOURCES }, (_, i) => ({
        id: `bench-mi-${i}`,
        environmentId: 'bench-env',
        name: `svc-${i}`,
        logSources: [
          {
            id: 'app',
            kind: 'ui.logs',
            cloudAccountId: BENCH_ACCOUNT,
            region: BENCH_REGION,
            logGroup: `/bench/svc-${i}`,
          },
        ],
      })),
    }),
  );
  const store = await openBenchStore(db);
  try {
    await insertGeneratedEvents(store, { groupPrefix: '/bench/svc-', groups: SOURCES, events: EVENTS, spanMs: DAY_MS });
  } finally {
    await store.close();
  }
  progress(`${db.kind}: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** The targets Berth resolves for `environmentId: bench-env`. */
function targets(): LogTarget[] {
  const account = {
    id: BENCH_ACCOUNT,
    organizationId: BENCH_ORG,
    provider: 'local' as const,
    region: BENCH_REGION,
    roleArn: null,
    externalId: null,
    endpoint: null,
  };
  return Array.from({ length: SOURCES }, (_, i) => ({
    account,
    region: BENCH_REGION,
    logGroup: `/bench/svc-${i}`,
    streams: { kind: 'all' as const },
    sourceId: `bench-mi-${i}`,
    logSourceId: 'app',
  }));
}

/** A bare node:http server answering each path with the bytes registered for it. */
async function staticServer(): Promise<{ url: string; bodies: Map<string, Buffer>; close(): void }> {
  const bodies = new Map<string, Buffer>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = bodies.get(req.url ?? '') ?? Buffer.from('{}');
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    bodies,
    close: () => server.close(),
  };
}

interface Samples {
  sql: number[];
  berth: number[];
  static: number[];
  rows: number;
  bytes: number;
}

/**
 * Each case's samples take the three measurements (statement, Berth, static server) in turn, so a
 * change in the machine's load during the run weighs on all three alike.
 */
async function measure(kind: DatabaseKind, db: BenchDatabase, baselineDb: BenchDatabase): Promise<Samples[]> {
  const config = loadConfig({});
  const store = await openBenchStore(baselineDb);
  const berth = await startBerth(db);
  const client = startClient();
  const server = await staticServer();
  try {
    const backend = new LocalLogBackend(store.db, store.run, {
      maxParams: config.MAX_SQL_PARAMS,
      maxBytes: config.MAX_SQL_BYTES,
    });
    const out: Samples[] = [];
    for (const c of CASES) {
      progress(`${kind}: ${describe(c)}, ${c.samples} samples of each`);
      const statement = backend.statement({
        targets: targets(),
        window: { startMs: WINDOW.startTime, endMs: WINDOW.endTime },
        filter: planFilter(parseFilter(c.filter ?? { kind: 'all' }), sqlCapabilities).pushed,
        // The service reads one row more than the page, to know whether older rows exist.
        limit: c.rows + 1,
      });
      const sqlOnce = async () => {
        const t0 = performance.now();
        const result = await store.db.executeQuery(statement);
        JSON.stringify(result.rows);
        return { ms: performance.now() - t0, rows: result.rows };
      };
      const berthOnce = async (keepBody = false) => {
        const r = await client.request({
          url: `${berth.url}/cloud/logs/logs-insights`,
          method: 'POST',
          headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            ...WINDOW,
            environmentId: 'bench-env',
            ...(c.complete ? { complete: true } : { limit: c.rows }),
            filter: c.filter,
          }),
          keepBody,
        });
        if (r.status !== 200) throw new Error(`${c.name}: HTTP ${r.status} ${r.body}`);
        return r;
      };
      const staticOnce = () =>
        client.request({
          url: `${server.url}/${c.name}`,
          method: 'POST',
          body: JSON.stringify({ ...WINDOW, limit: c.rows }),
        });

      const first = await berthOnce(true);
      const sqlFirst = await sqlOnce();
      // Berth answered the statement's rows: the same page, in the same order.
      const ids = (JSON.parse(first.body!) as { rows: { eventId: string }[] }).rows.map((r) => r.eventId);
      const expected = sqlFirst.rows.slice(0, c.rows).map((r) => r.event_id);
      if (ids.length !== expected.length || ids.some((id, k) => id !== expected[k])) {
        throw new Error(
          `${c.name}: Berth's page differs from the statement's rows (${ids.length} vs ${expected.length})`,
        );
      }
      server.bodies.set(`/${c.name}`, Buffer.from(first.body!));
      for (let i = 1; i < WARMUP; i++) {
        await sqlOnce();
        await berthOnce();
        await staticOnce();
      }
      const samples: Samples = { sql: [], berth: [], static: [], rows: ids.length, bytes: first.bytes };
      for (let i = 0; i < c.samples; i++) {
        samples.sql.push((await sqlOnce()).ms);
        samples.berth.push((await berthOnce()).ms);
        samples.static.push((await staticOnce()).ms);
      }
      out.push(samples);
    }
    return out;
  } finally {
    client.close();
    server.close();
    await berth.stop();
    await store.close();
  }
}

const figures = (l: number[]) => ({ value: median(l), median: median(l), p99: quantile(l, 0.99) });

async function benchDatabase(kind: DatabaseKind): Promise<BenchRow[]> {
  const { db, baseline } = await keptDatabase(kind, 'query', DATA_KEY, seed);
  const runs = await measure(kind, db, baseline);
  return CASES.flatMap((c, i): BenchRow[] => {
    const run = runs[i]!;
    const berth = figures(run.berth);
    const sqlFigures = figures(run.sql);
    const notes =
      `${run.rows} rows, ${(run.bytes / 1024).toFixed(0)} KiB; ${c.samples} sequential requests of each, ` +
      `interleaved; ${EVENTS.toLocaleString('en')} events`;
    return [
      {
        label: `${describe(c)}: p50 vs (a) same SQL + JSON.stringify`,
        database: kind,
        unit: 'ms',
        ...berth,
        baseline: { label: 'same SQL, same driver + JSON.stringify', ...sqlFigures },
        ratio: berth.value / sqlFigures.value,
        target: 'p50 ≤ 1.5× (a)',
        met: berth.value <= 1.5 * sqlFigures.value,
        notes,
      },
      ...(c.complete
        ? [
            {
              label: `${describe(c)}: p50, 50 groups`,
              database: kind,
              unit: 'ms',
              ...berth,
              baseline: { label: 'same SQL, same driver + JSON.stringify', ...sqlFigures },
              ratio: berth.value / 250,
              target: 'p50 ≤ 250 ms',
              met: berth.value <= 250,
              notes,
            } satisfies BenchRow,
          ]
        : []),
      {
        label: `${describe(c)}: p50 vs (b) static server`,
        database: kind,
        unit: 'ms',
        ...berth,
        baseline: { label: 'node:http, the same bytes', ...figures(run.static) },
        ratio: berth.value / median(run.static),
        target: 'reported',
        met: null,
      },
    ];
  });
}

const skipped: string[] = [];
const rows: BenchRow[] = [];
for (const kind of await databaseKinds(skipped)) rows.push(...(await benchDatabase(kind)));
for (const r of rows) if (r.notes) progress(`${r.label} [${r.database}]: ${r.notes}`);
writeResult({ name: NAME, rows, skipped });
