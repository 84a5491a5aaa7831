/**
 * Tenant A of the noisy-neighbour test, run as its own process (`node --import tsx noisy-driver.ts`, plan over IPC) so
 * that building megabyte bodies and parsing 10,000-row answers never delays the test's own clock, which times tenant B.
 * Every kind of heavy request runs in a loop on its own connections until the test says stop; requests in flight then
 * run to their end (each within its deadline, or it is reported as a hang). Loopback only, bounded in time.
 */
import { randomBytes } from 'node:crypto';
import {
  errorCode,
  type Expected,
  errorObjectProblem,
  histogramVerdict,
  MAX_BUCKETS,
  ingestBody,
  queryBody,
  queryVerdict,
  scanRegex,
  streamPath,
  widestFilter,
  worstRegex,
  LIMITS,
  type QueryVerdict,
  type QueryWindow,
} from './noisy-heavy.js';
import { ADDRESS, clientAgent, exchange, openHistoryStream, type Exchange, type StreamOutcome } from './noisy-http.js';
import type { NoisyTenant } from './noisy-world.js';

export const KIND_NAMES = [
  'regex over a page (RE2)',
  'regex with a literal no event has',
  'widest filter (SQL)',
  'widest filter (in process)',
  'complete: true',
  'histogram of the widest filter',
  'history stream',
  'ingest at the limits',
  'random tokens',
] as const;
export type KindName = (typeof KIND_NAMES)[number];

export interface NoisyPlan {
  url: string;
  a: NoisyTenant;
  /** Organization and module instance of B, for the flood's paths (a stranger's token asks for them). */
  b: NoisyTenant;
  window: QueryWindow;
  kinds: KindName[];
  deadlines: Deadlines;
}

/** When each kind must have answered (ms from sending); the client waits `HANG_GRACE_MS` longer before giving up. */
export interface Deadlines {
  query: number;
  ingest: number;
  flood: number;
  /** Head of a stream and, on 200, its first events. */
  stream: number;
}

export const HANG_GRACE_MS = 5_000;

/** The answers that show a kind's work was done (not refused). */
export const SERVED = ['rows', 'partial', 'unsupported', 'accepted', 'events'];

/** One request's end as the driver judged it. */
export interface Outcome {
  status: number;
  ms: number;
  /** rows, partial, unsupported, accepted, events, or the error code of a 4xx. */
  verdict: string;
  /** Set when the answer is not an honest one (or came late): the test fails on any. */
  problem?: string;
}

export interface KindReport {
  kind: KindName;
  connections: number;
  requests: number;
  statuses: Record<string, number>;
  verdicts: Record<string, number>;
  p50: number;
  max: number;
  problems: string[];
  /** Problems past the first five, counted only. */
  moreProblems: number;
  /** Streams only: events read, over all streams. */
  events?: number;
}

export interface DriverReport {
  seconds: number;
  kinds: KindReport[];
}

interface Kind {
  name: KindName;
  connections: number;
  /** One request (a stream: one stream's start); resolves when it has ended. */
  once(slot: number): Promise<Outcome>;
}

let stopping = false;
const streamsOpen = new Set<() => StreamOutcome>();
const streamEvents = { total: 0 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The parts of an answer every kind judges alike: no answer, 5xx, an error body that is not the error object. */
function judgeCommon(r: Exchange, deadlineMs: number): Outcome | undefined {
  const base = { status: r.status, ms: r.ms };
  if (r.status === 0)
    return { ...base, verdict: 'no answer', problem: `no answer (${r.error}) after ${r.ms.toFixed(0)} ms` };
  if (r.ms > deadlineMs) return { ...base, verdict: 'late', problem: `${r.status} after ${r.ms.toFixed(0)} ms` };
  if (r.status >= 500) return { ...base, verdict: `${r.status}`, problem: `${r.status} ${r.body.slice(0, 200)}` };
  if (r.status >= 400) {
    const bad = errorObjectProblem(r.body);
    if (bad !== undefined) return { ...base, verdict: `${r.status}`, problem: `${r.status} body: ${bad}` };
    const code = errorCode(r.body)!;
    if (r.status === 429 && code === 'http:request:rate-limited' && r.headers['retry-after'] === undefined)
      return { ...base, verdict: code, problem: '429 without Retry-After' };
    return { ...base, verdict: r.status === 429 ? '429' : code };
  }
  return undefined;
}

/** A 4xx other than 429 to one of A's own, valid requests: the request is outside the limits (the test is wrong). */
function refusedValid(o: Outcome): Outcome {
  if (o.problem === undefined && o.status >= 400 && o.status !== 429)
    return { ...o, problem: `${o.status} ${o.verdict}: a request within the limits was refused` };
  return o;
}

/** A heavy POST of A's whose 200 is judged by `judge` (the log query's or the histogram's verdict). */
function postKind(
  plan: NoisyPlan,
  name: KindName,
  connections: number,
  path: string,
  body: string,
  judge: (body: string) => QueryVerdict,
): Kind {
  const agent = clientAgent(ADDRESS.noisy, connections);
  if (Buffer.byteLength(body) > LIMITS.bodyBytes) throw new Error(`${name}: body of ${body.length} bytes`);
  return {
    name,
    connections,
    async once() {
      const r = await exchange(plan.url, path, {
        method: 'POST',
        token: plan.a.token,
        body,
        agent,
        timeoutMs: plan.deadlines.query + HANG_GRACE_MS,
      });
      const common = judgeCommon(r, plan.deadlines.query);
      if (common !== undefined) return refusedValid(common);
      if (r.status !== 200)
        return { status: r.status, ms: r.ms, verdict: `${r.status}`, problem: `status ${r.status}` };
      const verdict = judge(r.body);
      return verdict.kind === 'problem'
        ? { status: 200, ms: r.ms, verdict: 'dishonest', problem: verdict.why }
        : { status: 200, ms: r.ms, verdict: verdict.kind };
    },
  };
}

function queryKind(
  plan: NoisyPlan,
  name: KindName,
  connections: number,
  extra: Record<string, unknown>,
  expected: Expected,
): Kind {
  const body = queryBody(plan.a, plan.window, extra);
  return postKind(plan, name, connections, '/cloud/logs/logs-insights', body, (b) => queryVerdict(b, expected));
}

/** The histogram (issue 13) of the widest filter over A's whole window in 200 buckets: every event is counted or not. */
function histogramKind(plan: NoisyPlan, connections: number): Kind {
  const body = queryBody(plan.a, plan.window, { buckets: MAX_BUCKETS, filter: widestFilter(false) });
  return postKind(
    plan,
    'histogram of the widest filter',
    connections,
    '/cloud/logs/logs-insights/histogram',
    body,
    (b) => histogramVerdict(b, plan.window),
  );
}

function ingestKind(plan: NoisyPlan, connections: number): Kind {
  const agent = clientAgent(ADDRESS.noisy, connections);
  let batch = 0;
  return {
    name: 'ingest at the limits',
    connections,
    async once(slot) {
      const body = ingestBody(plan.a, `ingest/${slot}`, Date.now() + batch++);
      const r = await exchange(plan.url, '/cloud/logs/local/events', {
        method: 'POST',
        token: plan.a.token,
        body,
        agent,
        timeoutMs: plan.deadlines.ingest + HANG_GRACE_MS,
      });
      const common = judgeCommon(r, plan.deadlines.ingest);
      if (common !== undefined) return refusedValid(common);
      let accepted: unknown;
      try {
        accepted = (JSON.parse(r.body) as { data?: { accepted?: unknown } }).data?.accepted;
      } catch {
        accepted = undefined;
      }
      if (r.status !== 202 || accepted !== LIMITS.ingestEvents)
        return { status: r.status, ms: r.ms, verdict: 'dishonest', problem: `${r.status} ${r.body.slice(0, 120)}` };
      return { status: r.status, ms: r.ms, verdict: 'accepted' };
    },
  };
}

/** Well-formed tokens of keys that do not exist, A's key id with a wrong secret, and tokens of no known shape. */
function randomToken(i: number, a: NoisyTenant): string {
  const hex = (n: number) => randomBytes(n).toString('hex');
  switch (i % 3) {
    case 0:
      return `berth_k${hex(8)}_${hex(16)}`;
    case 1:
      return `${a.token.slice(0, a.token.lastIndexOf('_') + 1)}${hex(16)}`;
    default:
      return hex(24);
  }
}

function floodKind(plan: NoisyPlan, connections: number): Kind {
  const agent = clientAgent(ADDRESS.flood, connections);
  let n = 0;
  const paths = [
    { method: 'GET', path: `/organizations/${plan.b.organizationId}/permitted-identity-providers` },
    {
      method: 'POST',
      path: '/cloud/logs/logs-insights',
      body: queryBody(plan.b, plan.window, { moduleInstanceIds: [plan.b.moduleInstanceId], environmentId: undefined }),
    },
    { method: 'GET', path: streamPath(plan.a) },
  ];
  return {
    name: 'random tokens',
    connections,
    async once() {
      const i = n++;
      const target = paths[i % paths.length]!;
      const r = await exchange(plan.url, target.path, {
        method: target.method,
        token: randomToken(Math.floor(i / paths.length), plan.a),
        body: target.body,
        agent,
        timeoutMs: plan.deadlines.flood + HANG_GRACE_MS,
      });
      const common = judgeCommon(r, plan.deadlines.flood);
      if (common === undefined)
        return { status: r.status, ms: r.ms, verdict: 'let in', problem: `${r.status} to a random token` };
      if (common.problem === undefined && r.status !== 401 && r.status !== 429)
        return { ...common, problem: `${r.status} ${common.verdict} to a random token` };
      return common;
    },
  };
}

/**
 * Ten history streams over A's big group: half read slowly, half read their first events and then nothing. A stream
 * that is refused (429) tries again shortly after; one that is let in stays open until the test stops the driver.
 */
function streamKind(plan: NoisyPlan, connections: number): Kind {
  const agent = clientAgent(ADDRESS.noisy, connections);
  const path = streamPath(plan.a);
  return {
    name: 'history stream',
    connections,
    async once(slot) {
      const stream = openHistoryStream(plan.url, path, {
        token: plan.a.token,
        agent,
        mode: slot % 2 === 0 ? 'slow' : 'stalled',
        pauseMs: 200,
        deadlineMs: plan.deadlines.stream,
      });
      const start = await stream.started;
      const base = { status: start.status, ms: start.firstEventsMs ?? start.headMs };
      if (start.status === 0) {
        stream.close();
        return {
          ...base,
          verdict: 'no answer',
          problem: `no response head within ${plan.deadlines.stream} ms (${start.error})`,
        };
      }
      if (start.status !== 200) {
        stream.close();
        const common = judgeCommon(
          {
            status: start.status,
            body: start.body,
            headers: start.retryAfter === undefined ? {} : { 'retry-after': start.retryAfter },
            ms: start.headMs,
            reused: false,
          },
          plan.deadlines.stream,
        );
        return refusedValid(common ?? { ...base, verdict: `${start.status}`, problem: 'refused without a status' });
      }
      if (start.firstEventsMs === undefined) {
        const end = stream.close();
        streamEvents.total += end.events;
        return {
          ...base,
          verdict: end.final ? 'ended without events' : 'no events',
          problem: `200 but no history events within ${plan.deadlines.stream} ms${end.errorFrames > 0 ? ' (event: error)' : ''}`,
        };
      }
      // Let in: it stays open (reading slowly or not at all) until the driver stops.
      streamsOpen.add(stream.close);
      while (!stopping) await sleep(100);
      streamsOpen.delete(stream.close);
      const end = stream.close();
      streamEvents.total += end.events;
      return { ...base, verdict: 'events' };
    },
  };
}

function kinds(plan: NoisyPlan): Kind[] {
  const all: Kind[] = [
    queryKind(
      plan,
      'regex over a page (RE2)',
      2,
      { limit: LIMITS.rows, filter: { kind: 'text', op: 'regex', value: worstRegex() } },
      'none',
    ),
    queryKind(
      plan,
      'regex with a literal no event has',
      2,
      { limit: LIMITS.rows, filter: { kind: 'text', op: 'regex', value: scanRegex() } },
      'none',
    ),
    queryKind(plan, 'widest filter (SQL)', 2, { limit: LIMITS.rows, filter: widestFilter(false) }, 'none'),
    queryKind(plan, 'widest filter (in process)', 2, { limit: LIMITS.rows, filter: widestFilter(true) }, 'none'),
    queryKind(plan, 'complete: true', 20, { complete: true }, 'page'),
    histogramKind(plan, 2),
    streamKind(plan, 10),
    ingestKind(plan, 2),
    floodKind(plan, 4),
  ];
  return all.filter((k) => plan.kinds.includes(k.name));
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

function report(kind: Kind, outcomes: Outcome[]): KindReport {
  const count = (key: (o: Outcome) => string) =>
    outcomes.reduce<Record<string, number>>((acc, o) => {
      acc[key(o)] = (acc[key(o)] ?? 0) + 1;
      return acc;
    }, {});
  const ms = outcomes.map((o) => o.ms).sort((x, y) => x - y);
  const problems = outcomes.filter((o) => o.problem !== undefined).map((o) => `${o.problem}`);
  return {
    kind: kind.name,
    connections: kind.connections,
    requests: outcomes.length,
    statuses: count((o) => String(o.status)),
    verdicts: count((o) => o.verdict),
    p50: percentile(ms, 0.5),
    max: ms.length > 0 ? ms[ms.length - 1]! : Number.NaN,
    problems: problems.slice(0, 5),
    moreProblems: Math.max(0, problems.length - 5),
    ...(kind.name === 'history stream' ? { events: streamEvents.total } : {}),
  };
}

/** Runs every kind until `stop` resolves, then waits for the requests in flight. */
/** Drives A's kinds until `stop`; `onServed` hears of each kind's first served answer. */
export async function drive(
  plan: NoisyPlan,
  stop: Promise<void>,
  ready: () => void,
  onServed: (kind: KindName) => void = () => undefined,
): Promise<DriverReport> {
  const started = performance.now();
  const served = new Set<KindName>();
  void stop.then(() => (stopping = true));
  const running = kinds(plan).map(async (kind) => {
    const outcomes: Outcome[] = [];
    await Promise.all(
      Array.from({ length: kind.connections }, async (_, slot) => {
        while (!stopping) {
          const o = await kind.once(slot);
          outcomes.push(o);
          if (SERVED.includes(o.verdict) && !served.has(kind.name)) {
            served.add(kind.name);
            onServed(kind.name);
          }
          // A refused attacker comes back at once; only a refused stream waits a little, and a request that got no
          // answer at all (the server is stuck) is not repeated in a busy loop. The flood never waits.
          if (kind.name === 'history stream' && o.status !== 200) await sleep(500);
          else if (kind.name !== 'random tokens' && (o.status === 429 || o.status === 0)) await sleep(50);
        }
      }),
    );
    return report(kind, outcomes);
  });
  ready();
  const reports = await Promise.all(running);
  return { seconds: (performance.now() - started) / 1000, kinds: reports };
}

// As a child process: the plan arrives over IPC, then "stop"; the report goes back over IPC.
if (process.send !== undefined && process.argv[1]?.endsWith('noisy-driver.ts')) {
  let stopSignal!: () => void;
  const stop = new Promise<void>((r) => (stopSignal = r));
  process.on('message', (message: { plan?: NoisyPlan; stop?: boolean }) => {
    if (message.stop) stopSignal();
    if (message.plan === undefined) return;
    drive(
      message.plan,
      stop,
      () => process.send!({ ready: true }),
      (kind) => process.send!({ served: kind }),
    ).then(
      (result) => process.send!({ result }, () => process.disconnect()),
      (error: unknown) => {
        process.send!({ failed: (error as Error).stack ?? String(error) }, () => process.disconnect());
      },
    );
  });
  // The test going away ends the driver too.
  process.on('disconnect', () => {
    stopSignal();
    for (const close of streamsOpen) close();
    setTimeout(() => process.exit(0), 1_000).unref();
  });
}
