/**
 * `fanout`: 500 live-tail subscribers of one log group (`GET /cloud/logs/stream?tail=true`), events written
 * at a steady rate through `POST /cloud/logs/local/events`. Measured: upstream reads per poll interval
 * (Berth's `berth_log_stream_upstream_polls_total` over the writing window, against window / interval) and
 * the delivery delay (the writer starts the write → a subscriber has parsed the event), p50/p99; every
 * subscriber must receive every event exactly once. Baseline in the same run: one subscriber, same
 * everything. Targets: as many reads as one subscriber (≤ 1.1×); p99 ≤ 2 intervals. Berth, the subscribers
 * (bench/lib/b-subscribers.ts) and the writer (this process) are three processes.
 */
import { createDatabase, databaseKinds, seedFixture, startBerth, type DatabaseKind } from './lib/berth.js';
import { BENCH_ACCOUNT, BENCH_REGION, BENCH_TOKEN, benchFixture } from './lib/b-fixture.js';
import { monotonicMs, openSubscribers } from './lib/b-subscribers.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';

const NAME = 'fanout';
const progress = (message: string) => say(NAME, message);
const SUBSCRIBERS = scaled(500, 50);
const DURATION_MS = scaled(10_000, 3_000);
const RATE_PER_S = 50;
const INTERVAL_MS = 250;
const GROUP = '/bench/fanout';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Run {
  subscribers: number;
  events: number;
  readsPerInterval: number;
  p50: number;
  p99: number;
  max: number;
}

async function polls(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^berth_log_stream_upstream_polls_total (\d+)/m.exec(text);
  if (m === null) throw new Error('berth_log_stream_upstream_polls_total is not in /metrics');
  return Number(m[1]);
}

async function run(kind: DatabaseKind, subscribers: number): Promise<Run> {
  const db = await createDatabase(NAME, kind);
  try {
    await seedFixture(db, benchFixture());
    const berth = await startBerth(db, {
      STREAM_POLL_INTERVAL_MS: String(INTERVAL_MS),
      STREAM_MAX_PER_PRINCIPAL: String(Math.max(10, subscribers)),
      // One organization's subscribers: its share of streams (STREAM_MAX_PER_ORG, 100 by default) must hold them all.
      STREAM_MAX_PER_ORG: String(Math.max(100, subscribers)),
      // Every subscriber connects from 127.0.0.1: no per-address connection cap.
      MAX_CONNECTIONS_PER_ADDRESS: '0',
    });
    const total = Math.round((DURATION_MS / 1000) * RATE_PER_S);
    const write = async (message: string) => {
      const res = await fetch(`${berth.url}/cloud/logs/local/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          accountId: BENCH_ACCOUNT,
          region: BENCH_REGION,
          logGroup: GROUP,
          logStream: 'app/1',
          events: [{ message }],
        }),
      });
      if (res.status !== 202) throw new Error(`ingest: HTTP ${res.status} ${await res.text()}`);
    };
    const query = new URLSearchParams({
      accountId: BENCH_ACCOUNT,
      logGroups: GROUP,
      logStreamPrefix: 'app/',
      region: BENCH_REGION,
      tail: 'true',
    });
    const subs = await openSubscribers(`${berth.url}/cloud/logs/stream?${query}`, BENCH_TOKEN, subscribers, total);
    try {
      // Every subscriber is in the tail once it has a live event.
      await write('warm');
      for (let p = await subs.progress(); p.warm < subscribers; p = await subs.progress()) {
        if (p.failed > 0) throw new Error(`${p.failed} subscribers failed while warming up`);
        await sleep(50);
      }
      // Steady writes: event i is due at start + i / rate.
      const polls0 = await polls(berth.url);
      const start = monotonicMs();
      for (let i = 0; i < total; i++) {
        const wait = start + (i * 1000) / RATE_PER_S - monotonicMs();
        if (wait > 0) await sleep(wait);
        await write(`bench ${i} ${monotonicMs().toFixed(3)}`);
      }
      const windowMs = monotonicMs() - start;
      const reads = (await polls(berth.url)) - polls0;
      const deadline = Date.now() + 30_000;
      for (let p = await subs.progress(); p.minCount < total; p = await subs.progress()) {
        if (Date.now() > deadline)
          throw new Error(`only ${p.minCount} of ${total} events reached the slowest subscriber`);
        await sleep(50);
      }
      const d = await subs.finish();
      const short = d.counts.filter((c) => c !== total).length;
      if (d.counts.length !== subscribers || short > 0 || d.repeats > 0 || d.errors.length > 0) {
        throw new Error(
          `delivery incomplete: ${short} subscribers short, ${d.repeats} repeats, errors: ${d.errors.slice(0, 3).join('; ')}`,
        );
      }
      if (d.deliveries !== subscribers * total)
        throw new Error(`${d.deliveries} deliveries measured, ${subscribers * total} expected`);
      const r = {
        subscribers,
        events: total,
        readsPerInterval: reads / (windowMs / INTERVAL_MS),
        p50: d.p50,
        p99: d.p99,
        max: d.max,
      };
      progress(
        `${kind}, ${subscribers} subscribers: ${r.readsPerInterval.toFixed(2)} reads/interval, delay p50 ` +
          `${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms`,
      );
      return r;
    } finally {
      subs.close();
      await berth.stop();
    }
  } finally {
    await db.close();
  }
}

async function benchDatabase(kind: DatabaseKind): Promise<BenchRow[]> {
  const one = await run(kind, 1);
  const many = await run(kind, SUBSCRIBERS);
  const what = `${many.events} events at ${RATE_PER_S}/s, every one delivered once to every subscriber`;
  return [
    {
      label: `${SUBSCRIBERS} tail subscribers: upstream reads per poll interval`,
      database: kind,
      unit: 'reads/interval',
      value: many.readsPerInterval,
      baseline: { label: '1 subscriber', value: one.readsPerInterval },
      ratio: many.readsPerInterval / one.readsPerInterval,
      // What 500 subscribers must not do is multiply the reads: they share the one subscriber's. Both read more
      // than once per interval, since ingest wakes the tail (at most every 50 ms) between the timer's reads.
      target: 'as many reads as 1 subscriber (≤ 1.1×)',
      met: many.readsPerInterval / one.readsPerInterval <= 1.1,
      notes: `STREAM_POLL_INTERVAL_MS=${INTERVAL_MS}; ${what}`,
    },
    {
      label: `${SUBSCRIBERS} tail subscribers: delivery delay p99, in poll intervals`,
      database: kind,
      unit: 'ms',
      value: many.p99,
      median: many.p50,
      p99: many.p99,
      baseline: { label: '1 subscriber', value: one.p99, median: one.p50, p99: one.p99 },
      ratio: many.p99 / INTERVAL_MS,
      target: 'p99 ≤ 2 intervals',
      met: many.p99 <= 2 * INTERVAL_MS,
      notes:
        `ratio = p99 / interval (${INTERVAL_MS} ms); 1 subscriber: ${(one.p99 / INTERVAL_MS).toFixed(2)} intervals; ` +
        `max ${many.max.toFixed(0)} ms`,
    },
  ];
}

const skipped: string[] = [];
const rows: BenchRow[] = [];
for (const kind of await databaseKinds(skipped)) rows.push(...(await benchDatabase(kind)));
for (const r of rows) if (r.notes) progress(`${r.label} [${r.database}]: ${r.notes}`);
writeResult({ name: NAME, rows, skipped });
