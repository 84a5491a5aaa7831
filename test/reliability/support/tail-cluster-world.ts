// The pieces of tail-cluster.test.ts: three `berth serve` on one PostgreSQL (reached over HTTP only), SSE
// subscribers on plain sockets that count every message they receive and keep their last SSE id, a ledger of the
// events put at the fake, and what /metrics and the fake's call log say about upstreams.
import http from 'node:http';
import type { FakeAws } from '../../support/fake-aws/index.js';
import { streamQuery } from '../../support/log-stream-wire.js';
import { type BerthProcess, spawnBerth, startBerth, type Berth } from './berth-process.js';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** One `berth serve` of the cluster; `proc` is replaced when it is started again. */
export interface Replica {
  name: string;
  proc: BerthProcess;
}

export interface Cluster {
  /** Owns the database (seeded by it); its first process is replicas[0]. */
  first: Berth;
  replicas: Replica[];
  /** `kill -9`; resolves once the process is gone. */
  kill(replica: Replica): Promise<void>;
  /** Starts the replica again on the same database and environment. */
  restart(replica: Replica): Promise<void>;
  close(): Promise<void>;
}

/** `count` replicas on one fresh PostgreSQL database, seeded with `fixture`. */
export async function startCluster(fixture: Record<string, unknown>, env: Record<string, string>, count = 3) {
  const first = await startBerth({ fixture, env, database: 'postgres' });
  const others = await Promise.all(Array.from({ length: count - 1 }, () => spawnBerth(first.env)));
  const replicas: Replica[] = [first.server, ...others].map((proc, i) => ({ name: `r${i}`, proc }));
  const cluster: Cluster = {
    first,
    replicas,
    kill: async (replica) => void (await replica.proc.stop('SIGKILL')),
    restart: async (replica) => {
      replica.proc = await spawnBerth(first.env);
    },
    close: async () => {
      for (const r of replicas) await r.proc.stop('SIGKILL');
      await first.close();
    },
  };
  return cluster;
}

/** One tail key: a log group and stream prefix of the test's aws account (region and pattern are the same). */
export interface TailKey {
  name: string;
  group: string;
  stream: string;
  prefix: string;
}

/**
 * A `GET /cloud/logs/stream?tail=true` client on a plain socket (300 of them in one process), which may reconnect
 * with its last SSE id. `counts` sums every connection's deliveries: a repeat after a resume shows as a count of 2.
 */
export class TailSubscriber {
  readonly counts = new Map<string, number>();
  received = 0;
  lastId: string | undefined;
  /** `event: error` frames, and connections that failed or ended. */
  readonly errors: string[] = [];
  replica: Replica | undefined;
  connected = false;
  /** Reconnected with its last SSE id. */
  resumed = false;
  private request: http.ClientRequest | undefined;

  constructor(
    readonly key: TailKey,
    private readonly params: Record<string, string>,
    private readonly token: string,
  ) {}

  /** Opens the stream on `replica` (with Last-Event-ID when `resume`); resolves once the 200 headers arrived. */
  connect(replica: Replica, resume = false): Promise<void> {
    this.replica = replica;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' };
    if (resume && this.lastId !== undefined) headers['last-event-id'] = this.lastId;
    this.resumed ||= resume;
    const url = `${replica.proc.url}/cloud/logs/stream?${streamQuery(this.params)}`;
    return new Promise((resolve, reject) => {
      const req = http.get(url, { headers, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => reject(new Error(`stream on ${replica.name}: HTTP ${res.statusCode} ${body}`)));
          return;
        }
        this.connected = true;
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
            this.frame(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
          }
        });
        res.on('close', () => (this.connected = false));
        // A replica killed mid-stream resets the connection: the test sees it as `connected` false.
        res.on('error', () => (this.connected = false));
        resolve();
      });
      req.on('error', (error) => {
        this.connected = false;
        reject(error);
      });
      this.request = req;
    });
  }

  private frame(block: string): void {
    let id: string | undefined;
    let event: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (data === undefined) return;
    if (event === 'error') {
      this.errors.push(data);
      return;
    }
    const payload = JSON.parse(data) as { events: { message: string }[]; isFinal: boolean };
    for (const e of payload.events) {
      this.counts.set(e.message, (this.counts.get(e.message) ?? 0) + 1);
      this.received++;
    }
    if (id !== undefined) this.lastId = id;
    if (payload.isFinal) this.errors.push(`final message on ${this.replica?.name}`);
  }

  close(): void {
    this.request?.destroy();
    this.connected = false;
  }
}

/** Opens `count` subscribers of `key`, the i-th on `replicaOf(i)`, in waves (so the accept queues stay short). */
export async function openSubscribers(
  count: number,
  key: TailKey,
  params: Record<string, string>,
  token: string,
  replicaOf: (i: number) => Replica,
): Promise<TailSubscriber[]> {
  const subs = Array.from({ length: count }, () => new TailSubscriber(key, params, token));
  for (let i = 0; i < count; i += 50) {
    await Promise.all(subs.slice(i, i + 50).map((s, j) => s.connect(replicaOf(i + j))));
  }
  return subs;
}

/** Every event put at the fake, by key: message → copies (identical events are several copies of one message). */
export class Ledger {
  readonly expected = new Map<string, Map<string, number>>();
  private n = 0;

  constructor(
    private readonly aws: FakeAws,
    private readonly tag: string,
  ) {}

  /**
   * Puts `count` events of `key` now. `same-ms`: one timestamp for all, its first message twice (two identical
   * events); `old`: timestamps `ageMs` back, ingested now (late ingestion within TAIL_LOOKBACK_MS).
   */
  put(key: TailKey, phase: string, count: number, kind: 'spread' | 'same-ms' | 'old' = 'spread', ageMs = 3_000) {
    const now = Date.now();
    const events = Array.from({ length: count }, (_, i) => ({
      message: `INFO ${this.tag} ${key.name} ${phase} ${++this.n}`,
      timestamp: kind === 'same-ms' ? now : kind === 'old' ? now - ageMs + i : now - count + 1 + i,
      ingestionTime: now,
    }));
    if (kind === 'same-ms' && events.length > 0) events.push({ ...events[0]! });
    this.aws.logs.putLogEvents(key.group, key.stream, events);
    const mine = this.expected.get(key.name) ?? new Map<string, number>();
    for (const e of events) mine.set(e.message, (mine.get(e.message) ?? 0) + 1);
    this.expected.set(key.name, mine);
  }

  total(key: TailKey): number {
    let sum = 0;
    for (const n of this.expected.get(key.name)?.values() ?? []) sum += n;
    return sum;
  }
}

export interface Delivery {
  subscribers: number;
  /** Subscribers missing at least one event, and the events missing in all. */
  short: number;
  missing: number;
  /** Deliveries beyond an event's copies, and messages no put of this key had. */
  repeats: number;
  foreign: number;
  errors: number;
  /** Subscribers whose connection is not open. */
  dropped: number;
  /** Where the short subscribers are (replica now, and key), and a few events missing or repeated. */
  where: Record<string, number>;
  examples: string[];
}

/** What every subscriber received against the ledger (exactly once each: `short`, `repeats`, `foreign` all 0). */
export function delivery(subs: TailSubscriber[], ledger: Ledger): Delivery {
  const d: Delivery = {
    subscribers: subs.length,
    short: 0,
    missing: 0,
    repeats: 0,
    foreign: 0,
    errors: 0,
    dropped: 0,
    where: {},
    examples: [],
  };
  const note = (s: TailSubscriber, m: string, got: number, n: number) => {
    if (d.examples.length < 6) d.examples.push(`${s.key.name} on ${s.replica?.name}: ${m} ×${got} of ${n}`);
  };
  for (const s of subs) {
    const want = ledger.expected.get(s.key.name) ?? new Map<string, number>();
    let missing = 0;
    for (const [m, n] of want) {
      const got = s.counts.get(m) ?? 0;
      if (got < n) {
        missing += n - got;
        note(s, m, got, n);
      }
    }
    for (const [m, got] of s.counts) {
      const n = want.get(m);
      if (n === undefined) d.foreign += got;
      else if (got > n) {
        d.repeats += got - n;
        note(s, m, got, n);
      }
    }
    if (missing > 0) {
      d.short++;
      const at = `${s.key.name}@${s.replica?.name}${s.resumed ? ' (resumed)' : ''}`;
      d.where[at] = (d.where[at] ?? 0) + 1;
    }
    d.missing += missing;
    d.errors += s.errors.length;
    if (!s.connected) d.dropped++;
  }
  return d;
}

/** Waits until every subscriber has every event of the ledger (then a little longer, for any repeat to show). */
export async function delivered(subs: TailSubscriber[], ledger: Ledger, timeoutMs: number): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const complete = subs.every((s) => s.received >= ledger.total(s.key)) && delivery(subs, ledger).short === 0;
    if (complete || Date.now() > deadline) break;
    await sleep(100);
  }
  await sleep(750);
  return delivery(subs, ledger);
}

/** `berth_log_tail_upstreams` by mode and `berth_log_tail_fallbacks_total` of one replica. */
export async function tailMetrics(replica: Replica): Promise<{ live: number; poll: number; fallbacks: number }> {
  const text = await (await fetch(`${replica.proc.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  return {
    live: value(/^berth_log_tail_upstreams\{mode="live"\} (\d+)/m),
    poll: value(/^berth_log_tail_upstreams\{mode="poll"\} (\d+)/m),
    fallbacks: value(/^berth_log_tail_fallbacks_total (\d+)/m),
  };
}

/** The sum of every replica's upstreams, by mode. */
export async function clusterUpstreams(replicas: Replica[]): Promise<{ live: number; poll: number; each: string }> {
  const all = await Promise.all(replicas.map(tailMetrics));
  return {
    live: all.reduce((a, m) => a + m.live, 0),
    poll: all.reduce((a, m) => a + m.poll, 0),
    each: all.map((m, i) => `${replicas[i]!.name}: live ${m.live} poll ${m.poll}`).join(', '),
  };
}

/** The most calls that arrived within any `windowMs` (a rolling window starting at each call). */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}
