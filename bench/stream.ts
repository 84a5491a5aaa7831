/**
 * `stream`: events/s of a 1,000,000-event history replay (`GET /cloud/logs/stream`, no tail) to one SSE
 * client, on PGlite and PostgreSQL. Baseline in the same run: the same rows read through the same driver
 * (Kysely over PGlite or node-postgres) in batches of the same size, each batch serialized as the same
 * SSE message and written to the response socket of a bare `node:http` server — the floor under
 * Berth's replay; target ≥ 0.5. The reader is another process (bench/lib/b-sse-client.ts); the
 * runs alternate, median of three. A Berth replay still running at 4× the baseline's time is cut short
 * (it misses the target by far then) and its rate is that of the part read. One log group holds every
 * event (kept in .bench-data/ or `berth_bench_stream`).
 */
import http from 'node:http';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { Store } from '../src/store/db.js';
import { databaseKinds, seedFixture, startBerth, type BenchDatabase, type DatabaseKind } from './lib/berth.js';
import { BENCH_ACCOUNT, BENCH_REGION, BENCH_TOKEN, benchFixture } from './lib/b-fixture.js';
import { DATA_END_MS, DAY_MS, insertGeneratedEvents, keptDatabase, openBenchStore } from './lib/b-dataset.js';
import { readSse, type SseRead } from './lib/b-sse-client.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { RUNS, scaled } from './lib/scale.js';
import { median } from './lib/stats.js';

const NAME = 'stream';
const progress = (message: string) => say(NAME, message);
const EVENTS = scaled(1_000_000, 10_000);
const DATA_KEY = `stream-v1 groups=1 events=${EVENTS}`;
const GROUP = '/bench/stream-0';
/** Berth's default STREAM_BATCH_SIZE: events per SSE message, and rows per statement. */
const BATCH = 500;
const START_MS = DATA_END_MS - DAY_MS;

async function seed(db: BenchDatabase): Promise<void> {
  progress(`${db.kind}: seeding ${EVENTS.toLocaleString('en')} events in one log group (kept for later runs)`);
  const t0 = performance.now();
  await seedFixture(db, benchFixture());
  const store = await openBenchStore(db);
  try {
    await insertGeneratedEvents(store, { groupPrefix: '/bench/stream-', groups: 1, events: EVENTS, spanMs: DAY_MS });
  } finally {
    await store.close();
  }
  progress(`${db.kind}: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

interface Row {
  log_stream: string;
  message: string;
  timestamp: number;
  ingestion_time: number;
  event_id: string;
  level: string;
}

/**
 * The floor: one keyset statement per batch on the group's (timestamp, event_id) index, each batch
 * one SSE message in Berth's wire format, written with backpressure.
 */
async function baselineServer(store: Store): Promise<{ url: string; close(): void }> {
  const server = http.createServer(async (req, res) => {
    const startMs = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('startMs') ?? START_MS);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    let after: { ts: number; id: string } | undefined;
    for (;;) {
      const { rows } = await sql<Row>`select log_stream, message, timestamp, ingestion_time, event_id, level
        from log_events
        where cloud_account_id = ${BENCH_ACCOUNT} and region = ${BENCH_REGION} and log_group = ${GROUP}
          and timestamp >= ${startMs} and timestamp <= ${DATA_END_MS}
          ${after === undefined ? sql`` : sql`and (timestamp, event_id) > (${after.ts}, ${after.id})`}
        order by timestamp, event_id limit ${BATCH}`.execute(store.db);
      if (rows.length === 0) break;
      const last = rows[rows.length - 1]!;
      after = { ts: Number(last.timestamp), id: last.event_id };
      const events = rows.map((r) => ({
        logStreamName: r.log_stream,
        message: r.message,
        timestamp: new Date(Number(r.timestamp)).toISOString(),
        ingestionTime: new Date(Number(r.ingestion_time)).toISOString(),
        level: r.level,
      }));
      const id = Buffer.from(JSON.stringify({ p: 'h', ts: after.ts, e: after.id })).toString('base64url');
      if (!res.write(`id: ${id}\ndata: ${JSON.stringify({ events, isFinal: false })}\n\n`)) await once(res, 'drain');
      if (rows.length < BATCH) break;
    }
    res.end('data: {"events":[],"isFinal":true}\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/stream`, close: () => server.close() };
}

/** Past this many times the baseline's time, Berth's replay is cut short (it misses ≥ 0.5 by far then). */
const CUT_FACTOR = 4;

function checked(what: string, r: SseRead, events = EVENTS): SseRead {
  if (r.status !== 200 || (!r.cut && (!r.final || r.events !== events))) {
    throw new Error(`${what}: HTTP ${r.status}, ${r.events} of ${events} events, final: ${r.final}`);
  }
  return r;
}

async function benchDatabase(kind: DatabaseKind): Promise<BenchRow> {
  const { db, baseline } = await keptDatabase(kind, 'stream', DATA_KEY, seed);
  const store = await openBenchStore(baseline);
  const floor = await baselineServer(store);
  const berth = await startBerth(db, { STREAM_BATCH_SIZE: String(BATCH) });
  const streamUrl = (startMs: number) =>
    `${berth.url}/cloud/logs/stream?${new URLSearchParams({
      accountId: BENCH_ACCOUNT,
      logGroups: GROUP,
      logStreamPrefix: 'task-',
      region: BENCH_REGION,
      startTime: String(startMs),
      endTime: String(DATA_END_MS),
    })}`;
  const auth = { authorization: `Bearer ${BENCH_TOKEN}` };
  try {
    // Warm both (JIT, caches) on the last 2% of the data.
    const warmStart = DATA_END_MS - DAY_MS / 50;
    await readSse(`${floor.url}?startMs=${warmStart}`);
    await readSse(streamUrl(warmStart), auth);

    const rate = (r: SseRead) => r.events / (r.ms / 1000);
    const berthRates: number[] = [];
    const floorRates: number[] = [];
    let bytes = 0;
    let cut: SseRead | undefined;
    for (let run = 0; run < RUNS && cut === undefined; run++) {
      const f = checked('baseline', await readSse(floor.url));
      floorRates.push(rate(f));
      const b = checked('Berth', await readSse(streamUrl(START_MS), auth, Math.max(10_000, CUT_FACTOR * f.ms)));
      berthRates.push(rate(b));
      if (b.cut) cut = b;
      else bytes = b.bytes;
      progress(
        `${kind}: run ${run + 1}: Berth ${Math.round(rate(b))} events/s${b.cut ? ` (cut short at ${b.events} events)` : ''}, ` +
          `baseline ${Math.round(rate(f))} events/s`,
      );
    }
    const value = median(berthRates);
    const base = median(floorRates);
    const notes =
      cut === undefined
        ? `median of ${RUNS} runs each, alternating; ${(bytes / 2 ** 20).toFixed(0)} MiB of SSE; batches of ${BATCH}`
        : `Berth's replay was cut short after ${(cut.ms / 1000).toFixed(1)} s (${CUT_FACTOR}× the baseline's time) at ` +
          `${cut.events.toLocaleString('en')} of ${EVENTS.toLocaleString('en')} events: the rate is of that part, one run`;
    return {
      label: `history replay of ${EVENTS.toLocaleString('en')} events to one SSE client`,
      database: kind,
      unit: 'events/s',
      value,
      baseline: { label: 'same rows, same driver, serialized to a socket', value: base },
      ratio: value / base,
      target: '≥ 0.5',
      met: value / base >= 0.5,
      notes,
    };
  } finally {
    await berth.stop();
    floor.close();
    await store.close();
  }
}

const skipped: string[] = [];
const rows: BenchRow[] = [];
for (const kind of await databaseKinds(skipped)) rows.push(await benchDatabase(kind));
for (const r of rows) if (r.notes) progress(`${r.label} [${r.database}]: ${r.notes}`);
writeResult({ name: NAME, rows, skipped });
