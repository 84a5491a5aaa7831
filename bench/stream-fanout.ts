/**
 * Log stream fan-out on the local provider (issue 5): N concurrent SSE subscribers of one log group
 * (`tail=true`), events written at a steady rate for a fixed time. Measured:
 *   - upstream polls (TailHub reads) over the writing window, against window / STREAM_POLL_INTERVAL_MS;
 *     baseline, same run: one subscriber for the same duration; the ratio must be ≈ 1 (shared polls);
 *   - that every subscriber received every event exactly once (asserted);
 *   - the delivery delay (write start → the subscriber has parsed the event), median and p99.
 * The subscribers are raw fetch stream readers in a worker thread, so their parsing does not run on the
 * server's event loop. The app is an in-memory PGlite app (buildApp + listen, as in the tests).
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config.js';
import { loadFixture } from '../src/fixtures/load.js';
import { buildApp } from '../src/http/app.js';
import { createServices } from '../src/services/index.js';
import { openStore } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';

const SUBSCRIBERS = Number(process.env.BENCH_STREAM_SUBSCRIBERS ?? 500);
const DURATION_MS = Number(process.env.BENCH_STREAM_DURATION_MS ?? 10_000);
const RATE_PER_S = Number(process.env.BENCH_STREAM_RATE ?? 50);
const INTERVAL_MS = Number(process.env.BENCH_STREAM_INTERVAL_MS ?? 250);

const TOKEN = 'berth_k-bench_bench-secret-000000000000';
const GROUP = '/bench/fanout';
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Subscriber side, plain JavaScript for a worker thread (no TypeScript loader needed there). */
const SUBSCRIBERS_JS = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, n, total } = workerData;
const now = () => performance.timeOrigin + performance.now();
const subs = [];
const controller = new AbortController();
let delays = new Float64Array(1024);
let delayCount = 0;
const pushDelay = (d) => {
  if (delayCount === delays.length) { const next = new Float64Array(delays.length * 2); next.set(delays); delays = next; }
  delays[delayCount++] = d;
};
function onFrame(sub, frame) {
  const line = frame.split('\\n').find((l) => l.startsWith('data: '));
  if (line === undefined) return;
  const payload = JSON.parse(line.slice(6));
  const at = now();
  for (const e of payload.events) {
    const parts = e.message.split(' ');
    if (parts[0] === 'warm') { sub.warm = true; continue; }
    const seq = Number(parts[1]);
    if (sub.marks[seq] === 1) sub.dupes++;
    else { sub.marks[seq] = 1; sub.count++; }
    pushDelay(at - Number(parts[2]));
  }
  if (payload.isFinal) sub.final = true;
}
async function subscribe(i) {
  const sub = { count: 0, dupes: 0, warm: false, final: false, marks: new Uint8Array(total), error: undefined };
  subs.push(sub);
  const res = await fetch(url, { headers: { authorization: 'Bearer ${TOKEN}', accept: 'text/event-stream' }, signal: controller.signal });
  if (res.status !== 200) throw new Error('subscriber ' + i + ': HTTP ' + res.status + ' ' + (await res.text()));
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\\n\\n')) >= 0) {
          onFrame(sub, buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) sub.error = String(error);
    }
  })();
}
parentPort.on('message', (msg) => {
  if (msg === 'progress') {
    let minCount = Infinity, warm = 0, errors = 0;
    for (const s of subs) { minCount = Math.min(minCount, s.count); if (s.warm) warm++; if (s.error || s.final) errors++; }
    parentPort.postMessage({ type: 'progress', minCount, warm, errors, opened: subs.length });
  } else if (msg === 'finish') {
    controller.abort();
    const counts = subs.map((s) => s.count);
    const dupes = subs.reduce((a, s) => a + s.dupes, 0);
    const errors = subs.filter((s) => s.error || s.final).map((s) => s.error || 'ended early');
    const d = delays.slice(0, delayCount);
    parentPort.postMessage({ type: 'result', counts, dupes, errors, delays: d }, [d.buffer]);
  }
});
(async () => {
  // Open in waves, so connection setup does not look like a flood of the accept queue.
  for (let i = 0; i < n; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, k) => subscribe(i + k)));
  }
  parentPort.postMessage({ type: 'opened' });
})().catch((error) => parentPort.postMessage({ type: 'error', error: String(error) }));
`;

interface Progress {
  type: 'progress';
  minCount: number;
  warm: number;
  errors: number;
  opened: number;
}
interface Result {
  type: 'result';
  counts: number[];
  dupes: number;
  errors: string[];
  delays: Float64Array;
}

class Subscribers {
  private readonly worker: Worker;
  private readonly waiting: ((msg: any) => void)[] = [];
  readonly opened: Promise<void>;

  constructor(url: string, n: number, total: number) {
    this.worker = new Worker(SUBSCRIBERS_JS, { eval: true, workerData: { url, n, total } });
    let openedResolve!: () => void;
    let openedReject!: (e: Error) => void;
    this.opened = new Promise((resolve, reject) => {
      openedResolve = resolve;
      openedReject = reject;
    });
    this.worker.on('message', (msg: { type: string; error?: string }) => {
      if (msg.type === 'opened') openedResolve();
      else if (msg.type === 'error') openedReject(new Error(msg.error));
      else this.waiting.shift()?.(msg);
    });
    this.worker.on('error', (e) => openedReject(e));
  }

  private ask<T>(msg: string): Promise<T> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.worker.postMessage(msg);
    });
  }
  progress(): Promise<Progress> {
    return this.ask('progress');
  }
  async finish(): Promise<Result> {
    const result = await this.ask<Result>('finish');
    await this.close();
    return result;
  }
  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

interface Run {
  subscribers: number;
  events: number;
  windowMs: number;
  polls: number;
  expectedPolls: number;
  medianMs: number;
  p99Ms: number;
  maxMs: number;
}

async function run(subscribers: number): Promise<Run> {
  const store = await openStore({ kind: 'pglite' });
  await migrate(store);
  await loadFixture(store.db, {
    organizations: [{ id: 'bench-org', name: 'Bench', permittedIdentityProviders: [] }],
    principals: [
      {
        id: 'bench-p',
        name: 'Bench',
        memberships: [{ organizationId: 'bench-org', role: 'owner' }],
        apiKeys: [{ id: 'k-bench', token: TOKEN, organizationId: 'bench-org' }],
      },
    ],
    cloudAccounts: [{ id: 'bench-acct', organizationId: 'bench-org', provider: 'local', region: 'eu-west-1' }],
  });
  const config = loadConfig(
    {},
    {
      LOG_LEVEL: 'silent',
      STREAM_POLL_INTERVAL_MS: INTERVAL_MS,
      STREAM_MAX_PER_PRINCIPAL: Math.max(10, subscribers),
    },
  );
  const services = createServices(store, config);
  const app = await buildApp({ config, store, services });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const hub = services.streams.hub;
  const total = Math.round((DURATION_MS / 1000) * RATE_PER_S);
  const target = { accountId: 'bench-acct', region: 'eu-west-1', logGroup: GROUP, logStream: 'app/1' };
  const write = (message: string) => services.ingest.ingest(null, target, [{ message }]);

  const subs = new Subscribers(
    `${base}/cloud/logs/stream?accountId=bench-acct&logGroups=${encodeURIComponent(GROUP)}&logStreamPrefix=app%2F&tail=true`,
    subscribers,
    total,
  );
  try {
    await subs.opened;
    // Every subscriber is in the tail once it has a live event.
    await write('warm');
    for (let p = await subs.progress(); p.warm < subscribers; p = await subs.progress()) {
      if (p.errors > 0) throw new Error(`${p.errors} subscribers failed while warming up`);
      await sleep(50);
    }
    if (hub.activePollers !== 1) throw new Error(`expected one poller, found ${hub.activePollers}`);

    // Steady writes: event i is due at start + i / rate.
    const polls0 = hub.polls;
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE_PER_S;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      await write(`bench ${i} ${now().toFixed(3)}`);
    }
    const windowMs = performance.now() - start;
    const polls = hub.polls - polls0;

    const deadline = Date.now() + 30_000;
    for (let p = await subs.progress(); p.minCount < total; p = await subs.progress()) {
      if (Date.now() > deadline)
        throw new Error(`only ${p.minCount} of ${total} events reached the slowest subscriber`);
      await sleep(50);
    }
    const result = await subs.finish();
    // Every subscriber received every event, exactly once.
    const short = result.counts.filter((c) => c !== total).length;
    if (result.counts.length !== subscribers || short > 0 || result.dupes > 0 || result.errors.length > 0) {
      throw new Error(
        `delivery incomplete: ${short} subscribers short, ${result.dupes} repeats, errors: ${result.errors.slice(0, 3).join('; ')}`,
      );
    }
    const delays = [...result.delays].sort((a, b) => a - b);
    if (delays.length !== subscribers * total)
      throw new Error(`expected ${subscribers * total} deliveries, measured ${delays.length}`);
    const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!;
    return {
      subscribers,
      events: total,
      windowMs,
      polls,
      expectedPolls: windowMs / INTERVAL_MS,
      medianMs: at(0.5),
      p99Ms: at(0.99),
      maxMs: delays[delays.length - 1]!,
    };
  } finally {
    await subs.close();
    await services.close();
    await app.close();
    await store.close();
  }
}

export async function benchStreamFanout(): Promise<void> {
  console.log(
    `\n## log stream fan-out (local provider, PGlite): ${RATE_PER_S} events/s for ${DURATION_MS / 1000} s, ` +
      `STREAM_POLL_INTERVAL_MS ${INTERVAL_MS}`,
  );
  const baseline = await run(1);
  const fanout = await run(SUBSCRIBERS);
  for (const r of [baseline, fanout]) {
    const label = r === baseline ? `baseline: 1 subscriber` : `${r.subscribers} subscribers`;
    console.log(
      `  ${label.padEnd(24)} ${r.events} events × ${r.subscribers} delivered, all exactly once` +
        `   polls ${String(r.polls).padStart(3)} in ${(r.windowMs / 1000).toFixed(2)} s ` +
        `(${(r.polls / r.expectedPolls).toFixed(2)} per interval)` +
        `   delay median ${r.medianMs.toFixed(1).padStart(6)} ms  p99 ${r.p99Ms.toFixed(1).padStart(6)} ms  max ${r.maxMs.toFixed(1)} ms`,
    );
  }
  console.log(
    `  upstream polls, ${fanout.subscribers} subscribers / 1 subscriber: ×${(fanout.polls / baseline.polls).toFixed(2)} ` +
      `(N independent pollers would be ×${fanout.subscribers})`,
  );
}
