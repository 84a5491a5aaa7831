/**
 * `fanout-cluster`: the aws live tail of one key on a cluster. N SSE subscribers (`GET /cloud/logs/stream?tail=true`)
 * spread round robin over three `berth serve` on one PostgreSQL database; events put at a fake CloudWatch Logs (this
 * process: StartLiveTail sends an update every UPDATE_INTERVAL_MS, FilterLogEvents answers the seams) at a steady
 * rate. Measured at the fake: upstream calls per second over the run (StartLiveTail sessions started, FilterLogEvents
 * calls, and the most FilterLogEvents calls in any 1 s); and the delivery delay (the event is put → a subscriber has
 * parsed it), p50/p99, every subscriber receiving every event exactly once. Baseline in the same run: the same N
 * subscribers on one replica. Targets: one StartLiveTail session and FilterLogEvents within 5/s, as on one replica;
 * the delay is reported (the bus between replicas adds a hop). PostgreSQL only: a cluster needs it. Berth (×3), the
 * subscribers (bench/lib/b-subscribers.ts) and the fake (this process) are separate processes.
 */
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../test/support/fake-aws/index.js';
import { createDatabase, databaseKinds, seedFixture, startBerth, type BerthServer } from './lib/berth.js';
import { BENCH_ORG, BENCH_REGION, BENCH_TOKEN, benchFixture } from './lib/b-fixture.js';
import { monotonicMs, openSubscribers } from './lib/b-subscribers.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';

const NAME = 'fanout-cluster';
const progress = (message: string) => say(NAME, message);
const SUBSCRIBERS = scaled(500, 30);
const DURATION_MS = scaled(10_000, 3_000);
const RATE_PER_S = 50;
/** The fake's StartLiveTail update interval (AWS: about 1 s; shorter here, so the bus hop shows in the delay). */
const UPDATE_INTERVAL_MS = 250;
/** AWS_FILTER_LOG_EVENTS_PER_SECOND, all replicas together. */
const FLE_PER_SECOND = 5;
const ACCOUNT = 'bench-aws';
const GROUP = '/bench/fanout-cluster';
const STREAM = 'app/1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Run {
  replicas: number;
  seconds: number;
  sessionsStarted: number;
  sessionsOpenMax: number;
  filterLogEvents: number;
  filterMaxIn1s: number;
  callsPerSecond: number;
  p50: number;
  p99: number;
  max: number;
}

function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

function put(aws: FakeAws, message: string): void {
  aws.logs.putLogEvents(GROUP, STREAM, [{ timestamp: Date.now(), message }]);
}

async function run(replicas: number): Promise<Run> {
  const aws = await startFakeAws({ liveTail: { updateIntervalMs: UPDATE_INTERVAL_MS }, logUnexpectedErrors: false });
  aws.logs.createLogStream(GROUP, STREAM);
  const db = await createDatabase(NAME, 'postgres');
  const servers: BerthServer[] = [];
  try {
    const base = benchFixture();
    await seedFixture(db, {
      ...base,
      cloudAccounts: [
        ...(base.cloudAccounts ?? []),
        { id: ACCOUNT, organizationId: BENCH_ORG, provider: 'aws', region: BENCH_REGION, endpoint: aws.endpoint },
      ],
    });
    const env = {
      AWS_ACCESS_KEY_ID: FAKE_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: FAKE_CREDENTIALS.secretAccessKey,
      AWS_REGION: BENCH_REGION,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_SESSION_TOKEN: '',
      AWS_PROFILE: '',
      STREAM_MAX_PER_PRINCIPAL: String(Math.max(10, SUBSCRIBERS)),
      STREAM_MAX_PER_ORG: String(Math.max(100, SUBSCRIBERS)),
      RATE_LIMIT_MAX: '0',
      // Every subscriber connects from 127.0.0.1: no per-address connection cap.
      MAX_CONNECTIONS_PER_ADDRESS: '0',
    };
    servers.push(...(await Promise.all(Array.from({ length: replicas }, () => startBerth(db, env)))));
    const total = Math.round((DURATION_MS / 1000) * RATE_PER_S);
    // startTime now: the history before the tail is empty, so opening makes no FilterLogEvents call per subscriber.
    const query = new URLSearchParams({
      accountId: ACCOUNT,
      logGroups: GROUP,
      logStreamPrefix: 'app/',
      tail: 'true',
      startTime: String(Date.now()),
    });
    const urls = servers.map((s) => `${s.url}/cloud/logs/stream?${query}`);
    const opened = Date.now();
    const subs = await openSubscribers(urls, BENCH_TOKEN, SUBSCRIBERS, total);
    let sessionsOpenMax = 0;
    const watch = setInterval(() => (sessionsOpenMax = Math.max(sessionsOpenMax, aws.liveTail.openSessions)), 50);
    try {
      // Every subscriber is in the tail once it has a live event.
      for (let p = await subs.progress(); p.warm < SUBSCRIBERS; p = await subs.progress()) {
        if (p.failed > 0) throw new Error(`${p.failed} subscribers failed while warming up`);
        if (Date.now() - opened > 60_000) throw new Error(`only ${p.warm} of ${SUBSCRIBERS} subscribers warmed up`);
        put(aws, 'warm');
        await sleep(250);
      }
      // Steady puts: event i is due at start + i / rate.
      const start = monotonicMs();
      for (let i = 0; i < total; i++) {
        const wait = start + (i * 1000) / RATE_PER_S - monotonicMs();
        if (wait > 0) await sleep(wait);
        put(aws, `bench ${i} ${monotonicMs().toFixed(3)}`);
      }
      const deadline = Date.now() + 30_000;
      for (let p = await subs.progress(); p.minCount < total; p = await subs.progress()) {
        if (Date.now() > deadline)
          throw new Error(`only ${p.minCount} of ${total} events reached the slowest subscriber`);
        await sleep(50);
      }
      const ended = Date.now();
      const d = await subs.finish();
      const short = d.counts.filter((c) => c !== total).length;
      if (d.counts.length !== SUBSCRIBERS || short > 0 || d.repeats > 0 || d.errors.length > 0) {
        throw new Error(
          `delivery incomplete: ${short} subscribers short, ${d.repeats} repeats, errors: ${d.errors.slice(0, 3).join('; ')}`,
        );
      }
      if (d.deliveries !== SUBSCRIBERS * total)
        throw new Error(`${d.deliveries} deliveries measured, ${SUBSCRIBERS * total} expected`);
      const fle = aws.callsTo('FilterLogEvents').map((c) => c.at);
      const seconds = (ended - opened) / 1000;
      const r: Run = {
        replicas,
        seconds,
        sessionsStarted: aws.liveTail.started,
        sessionsOpenMax,
        filterLogEvents: fle.length,
        filterMaxIn1s: maxInWindow(fle, 1_000),
        callsPerSecond: (aws.liveTail.started + fle.length) / seconds,
        p50: d.p50,
        p99: d.p99,
        max: d.max,
      };
      progress(
        `${replicas} replica(s), ${SUBSCRIBERS} subscribers, ${total} events: ${r.sessionsStarted} StartLiveTail ` +
          `(at most ${r.sessionsOpenMax} open), ${r.filterLogEvents} FilterLogEvents (at most ${r.filterMaxIn1s} in 1 s) ` +
          `in ${seconds.toFixed(1)} s; delay p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms`,
      );
      return r;
    } finally {
      clearInterval(watch);
      subs.close();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await db.close();
    await aws.close();
  }
}

async function bench(): Promise<BenchRow[]> {
  const one = await run(1);
  const three = await run(3);
  const calls = (r: Run) =>
    `${r.sessionsStarted} StartLiveTail (at most ${r.sessionsOpenMax} open) + ${r.filterLogEvents} FilterLogEvents ` +
    `(at most ${r.filterMaxIn1s} in any 1 s) in ${r.seconds.toFixed(1)} s`;
  const what = `${SUBSCRIBERS} subscribers, ${Math.round((DURATION_MS / 1000) * RATE_PER_S)} events at ${RATE_PER_S}/s, every one delivered once to every subscriber`;
  return [
    {
      label: `${SUBSCRIBERS} tail subscribers on 3 replicas: upstream calls per second at the fake`,
      database: 'postgres',
      unit: 'req/s',
      value: three.callsPerSecond,
      baseline: { label: '1 replica', value: one.callsPerSecond },
      ratio: three.callsPerSecond / one.callsPerSecond,
      target: '1 StartLiveTail session, FilterLogEvents ≤ 5 in any 1 s',
      met: three.sessionsStarted === 1 && three.sessionsOpenMax === 1 && three.filterMaxIn1s <= FLE_PER_SECOND,
      notes: `3 replicas: ${calls(three)}; 1 replica: ${calls(one)}; ${what}`,
    },
    {
      label: `${SUBSCRIBERS} tail subscribers on 3 replicas: delivery delay p99 (put → subscriber)`,
      database: 'postgres',
      unit: 'ms',
      value: three.p99,
      median: three.p50,
      p99: three.p99,
      baseline: { label: '1 replica', value: one.p99, median: one.p50, p99: one.p99 },
      ratio: three.p99 / one.p99,
      target: 'reported',
      met: null,
      notes:
        `StartLiveTail updates every ${UPDATE_INTERVAL_MS} ms at the fake (AWS: about 1 s); max ${three.max.toFixed(0)} ms ` +
        `(1 replica: ${one.max.toFixed(0)} ms); ${what}`,
    },
  ];
}

const skipped: string[] = [];
const rows: BenchRow[] = [];
if ((await databaseKinds(skipped)).includes('postgres')) rows.push(...(await bench()));
else skipped.push('every row: a cluster needs PostgreSQL');
for (const r of rows) if (r.notes) progress(`${r.label} [${r.database}]: ${r.notes}`);
writeResult({ name: NAME, rows, skipped });
