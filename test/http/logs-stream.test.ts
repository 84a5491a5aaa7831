// GET /cloud/logs/stream (operation 4, docs/design.md#4-log-stream), black-box over HTTP with a real SSE
// client (the `eventsource` package) and raw fetch readers, on the local provider.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventSource } from 'eventsource';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TOKEN } from '../../src/cli/main.js';
import { createServices } from '../../src/services/index.js';
import { LocalStreamSource } from '../../src/providers/local/log-stream/source.js';
import { LogStreamService } from '../../src/services/log-stream/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import type { Payload, WireEvent } from '../support/log-stream-wire.js';
import { startServerProcess } from '../support/process.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const PATH = '/cloud/logs/stream';
const REGION = 'eu-west-1';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const POLL_MS = 50;
const FAST = { STREAM_POLL_INTERVAL_MS: POLL_MS, STREAM_KEEPALIVE_MS: 200, STREAM_BATCH_SIZE: 50 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The world: fixed history in org A's local account, org B's account with the same group name.

const eventId = (ts: number, tag: string) => `${String(ts).padStart(16, '0')}${tag}`;
interface Seed {
  logGroup: string;
  logStream: string;
  timestamp: number;
  message: string;
  tag: string;
  cloudAccountId?: string;
  ingestionTime?: number;
}
const seed = (e: Seed) => ({
  cloudAccountId: e.cloudAccountId ?? 'acc-a',
  region: REGION,
  logGroup: e.logGroup,
  logStream: e.logStream,
  timestamp: e.timestamp,
  message: e.message,
  eventId: eventId(e.timestamp, e.tag),
  ...(e.ingestionTime === undefined ? {} : { ingestionTime: e.ingestionTime }),
});

// Two groups with overlapping timestamps (ties at T0+2000 and T0+5000), and the same stream name in both.
const H = {
  h1: seed({
    logGroup: '/hist/web',
    logStream: 'web/1',
    timestamp: T0 + 1000,
    message: 'INFO web started',
    tag: 'h1',
    ingestionTime: T0 + 1005,
  }),
  h2: seed({
    logGroup: '/hist/web',
    logStream: 'web/2',
    timestamp: T0 + 2000,
    message: 'ERROR web/2 failed',
    tag: 'h2',
  }),
  h3: seed({ logGroup: '/hist/web', logStream: 'job/1', timestamp: T0 + 2500, message: 'DEBUG job tick', tag: 'h3' }),
  h4: seed({
    logGroup: '/hist/web',
    logStream: 'web/1',
    timestamp: T0 + 3000,
    message: 'WARN slow request',
    tag: 'h4',
  }),
  h5: seed({
    logGroup: '/hist/web',
    logStream: 'web/1',
    timestamp: T0 + 5000,
    message: 'INFO web tied with api',
    tag: 'a',
  }),
  a1: seed({
    logGroup: '/hist/api',
    logStream: 'web/1',
    timestamp: T0 + 1500,
    message: 'INFO api web/1 up',
    tag: 'a1',
  }),
  a2: seed({
    logGroup: '/hist/api',
    logStream: 'api/1',
    timestamp: T0 + 2000,
    message: '{"level":"info","msg":"api/1 up"}',
    tag: 'a2',
  }),
  a3: seed({
    logGroup: '/hist/api',
    logStream: 'web/1',
    timestamp: T0 + 5000,
    message: 'ERROR api tied with web',
    tag: 'b',
  }),
  a4: seed({ logGroup: '/hist/api', logStream: 'web/1', timestamp: T0 + 7000, message: 'INFO api last', tag: 'a4' }),
  // Stream names that a LIKE without escaping would confuse with the prefix `web_`.
  x1: seed({ logGroup: '/hist/api', logStream: 'webx1', timestamp: T0 + 7500, message: 'INFO not web_', tag: 'x1' }),
  x2: seed({
    logGroup: '/hist/api',
    logStream: 'web_1',
    timestamp: T0 + 7600,
    message: 'INFO literal web_',
    tag: 'x2',
  }),
  b1: seed({
    cloudAccountId: 'acc-b',
    logGroup: '/hist/web',
    logStream: 'web/1',
    timestamp: T0 + 1000,
    message: 'INFO org b secret',
    tag: 'b1',
  }),
};
type HKey = keyof typeof H;
const msgs = (...keys: HKey[]) => keys.map((k) => H[k].message);

// 120 events in one stream; 45..55 share one millisecond, so the 50-event batch boundary falls inside a tie.
const BULK = Array.from({ length: 120 }, (_, i) => {
  const ts = T0 + 10_000 + (i >= 45 && i <= 55 ? 45 : i);
  return seed({
    logGroup: '/bulk',
    logStream: 'b/1',
    timestamp: ts,
    message: `bulk ${i}`,
    tag: String(i).padStart(4, '0'),
  });
});
const bulkMessages = (from = 0, to = 120) => BULK.slice(from, to).map((e) => e.message);

// Filter-pattern table: events, then patterns with the events they match (per the CloudWatch Logs documentation).
const FP = {
  m1: 'ERROR ARGUMENTS missing in call',
  m2: 'ERROR timeout connecting to db',
  m3: 'INFO request served in 12ms',
  m4: 'WARN upstream said INTERNAL SERVER ERROR',
  m5: '{"level":"ERROR","latency":700,"user":{"id":"u1"}}',
  m6: '{"level":"ERROR","latency":300,"retry":null}',
  m7: '{"level":"INFO","latency":900,"retry":true}',
  m8: '{"level":"WARN","latency":100}',
  m9: '127.0.0.1 frank GET /index.html 503',
  m10: '10.0.0.2 alice GET /api/users 200',
  m11: '10.0.0.3 bob POST /api/orders 504',
  m12: 'cat is on the mat',
  m13: 'hat trick',
  m14: 'the cat sat',
} as const;
type FpKey = keyof typeof FP;
const FP_KEYS = Object.keys(FP) as FpKey[];
const FP_EVENTS = FP_KEYS.map((k, i) =>
  seed({ logGroup: '/fp', logStream: 'fp/1', timestamp: T0 + 20_000 + i, message: FP[k], tag: k }),
);

const PATTERNS: [form: string, pattern: string, matches: FpKey[] | 'all'][] = [
  ['empty (disabled)', '', 'all'],
  ['blank', '   ', 'all'],
  ['match everything " "', '" "', 'all'],
  ['one term (case-sensitive)', 'ERROR', ['m1', 'm2', 'm4', 'm5', 'm6']],
  ['terms are case-sensitive', 'error', []],
  ['several terms (AND)', 'ERROR ARGUMENTS', ['m1']],
  ['quoted phrase', '"INTERNAL SERVER ERROR"', ['m4']],
  ['-exclusion', 'ERROR -ARGUMENTS', ['m2', 'm4', 'm5', 'm6']],
  ['?alternatives', '?WARN ?INFO', ['m3', 'm4', 'm7', 'm8']],
  ['?terms ignored next to plain terms', '?WARN ?INFO ARGUMENTS', ['m1']],
  ['JSON &&', '{ $.level = "ERROR" && $.latency > 500 }', ['m5']],
  ['JSON ||', '{ $.level = "ERROR" || $.latency > 800 }', ['m5', 'm6', 'm7']],
  ['JSON parentheses', '{ ($.level = "WARN" || $.level = "INFO") && $.latency < 500 }', ['m8']],
  ['JSON IS NULL', '{ $.retry IS NULL }', ['m6']],
  ['JSON IS TRUE', '{ $.retry IS TRUE }', ['m7']],
  ['JSON NOT EXISTS (JSON events only)', '{ $.retry NOT EXISTS }', ['m5', 'm8']],
  ['JSON nested selector', '{ $.user.id = "u1" }', ['m5']],
  ['JSON wildcard value', '{ $.level = ERR* }', ['m5', 'm6']],
  ['JSON != ', '{ $.level != "ERROR" }', ['m7', 'm8']],
  ['JSON regex value', '{ $.level = %^W% }', ['m8']],
  ['space-delimited with ...', '[ip, user, ..., status=5*]', ['m9', 'm11']],
  ['space-delimited && on one field', '[ip, user, ..., status = 5* && status != 503]', ['m11']],
  ['space-delimited leading fields', '[ip, user = alice, ...]', ['m10']],
  ['space-delimited numeric', '[ip, user, method, path, status >= 500]', ['m9', 'm11']],
  ['%regex%', '%^[hc]at%', ['m12', 'm13']],
  ['%regex% alternation', '%ERROR|WARN%', ['m1', 'm2', 'm4', 'm5', 'm6', 'm8']],
];

function fixture(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'acc-a', organizationId: ORG_A, provider: 'local', region: REGION },
      { id: 'acc-b', organizationId: ORG_B, provider: 'local', region: REGION },
    ],
    logEvents: [...Object.values(H), ...BULK, ...FP_EVENTS],
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Clients.

interface Received {
  id: string;
  data: Payload;
}
type Params = Record<string, string | number | boolean | string[] | undefined>;

function query(params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    for (const x of [v].flat()) q.append(k, String(x));
  }
  return q.toString();
}

/** Everything a test opened, closed after it; and the apps whose streams must then all be gone. */
const opened: { close(): void; app: TestApp }[] = [];

/** A real EventSource. Closes itself once `isFinal` arrives (else it would reconnect, as EventSource does). */
class SseClient {
  readonly messages: Received[] = [];
  /** `event: error` messages from the server (the error object). */
  readonly serverErrors: Record<string, unknown>[] = [];
  /** Connection failures the client saw (status code for a non-200 answer). */
  readonly failures: { code?: number; message?: string }[] = [];
  /** The headers of each connection attempt (EventSource reconnects with Last-Event-ID). */
  readonly attempts: Record<string, string>[] = [];
  readonly es: EventSource;
  readonly open: Promise<void>;
  final = false;
  /** Ends the body the client is reading (as a dropped connection would), so EventSource reconnects. */
  cut?: () => void;

  constructor(
    readonly app: TestApp,
    params: Params,
    options: { token?: string; lastEventId?: string; cuttable?: boolean } = {},
  ) {
    const token = options.token ?? TOKENS.owner;
    this.es = new EventSource(`${app.url}${PATH}?${query(params)}`, {
      fetch: async (input, init) => {
        const headers: Record<string, string> = { ...init?.headers, Authorization: `Bearer ${token}` };
        if (options.lastEventId !== undefined && this.attempts.length === 0)
          headers['Last-Event-ID'] = options.lastEventId;
        this.attempts.push(headers);
        const res = await fetch(input, { ...init, headers });
        return options.cuttable ? this.cuttable(res) : res;
      },
    });
    this.open = new Promise((resolve, reject) => {
      this.es.addEventListener('open', () => resolve(), { once: true });
      this.es.addEventListener(
        'error',
        (ev) => reject(new Error(`stream failed: ${(ev as { message?: string }).message}`)),
        { once: true },
      );
    });
    this.open.catch(() => undefined);
    this.es.addEventListener('message', (ev: MessageEvent) => {
      const data = JSON.parse(ev.data as string) as Payload;
      this.messages.push({ id: ev.lastEventId, data });
      if (data.isFinal) {
        this.final = true;
        this.es.close();
      }
    });
    this.es.addEventListener('error', (ev: Event) => {
      if (ev instanceof MessageEvent) this.serverErrors.push(JSON.parse(ev.data as string) as Record<string, unknown>);
      else this.failures.push({ code: (ev as { code?: number }).code, message: (ev as { message?: string }).message });
    });
    opened.push({ app, close: () => this.es.close() });
  }

  private cuttable(res: Response): Response {
    if (res.body === null) return res;
    const reader = res.body.getReader();
    let closed = false;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.cut = () => {
          if (closed) return;
          closed = true;
          controller.close();
          void reader.cancel();
        };
      },
      pull: async (controller) => {
        const { done, value } = await reader.read();
        if (closed) return;
        if (done) {
          closed = true;
          controller.close();
        } else controller.enqueue(value);
      },
      cancel: () => reader.cancel(),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  }

  get events(): WireEvent[] {
    return this.messages.flatMap((m) => m.data.events);
  }
  get texts(): string[] {
    return this.events.map((e) => e.message);
  }
  get lastId(): string {
    return this.messages[this.messages.length - 1]!.id;
  }
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void> {
    return waitFor(
      () => {
        if (this.failures.length > 0 && this.es.readyState === EventSource.CLOSED && !this.final) {
          throw new Error(`stream failed: ${JSON.stringify(this.failures)}`);
        }
        return condition();
      },
      what,
      timeoutMs,
    );
  }
  untilFinal(timeoutMs?: number): Promise<void> {
    return this.until(() => this.final, 'isFinal', timeoutMs);
  }
  untilTexts(n: number, timeoutMs?: number): Promise<void> {
    return this.until(() => this.texts.length >= n, `${n} events (have ${this.texts.length})`, timeoutMs);
  }
  close(): void {
    this.es.close();
  }
}

/** A raw fetch reader: the bytes exactly as the server framed them. */
class RawStream {
  text = '';
  ended = false;
  readonly done: Promise<void>;
  private readonly abort = new AbortController();
  res!: Response;
  private started!: Promise<void>;

  constructor(
    readonly app: TestApp,
    params: Params,
    options: { token?: string; headers?: Record<string, string> } = {},
  ) {
    let resolveDone!: () => void;
    this.done = new Promise((resolve) => (resolveDone = resolve));
    this.started = (async () => {
      try {
        this.res = await fetch(`${app.url}${PATH}?${query(params)}`, {
          headers: { authorization: `Bearer ${options.token ?? TOKENS.owner}`, ...options.headers },
          signal: this.abort.signal,
        });
      } catch (error) {
        resolveDone();
        throw error;
      }
      const reader = this.res.body!.getReader();
      const decoder = new TextDecoder();
      void (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            this.text += decoder.decode(value, { stream: true });
          }
          this.ended = true;
        } catch {
          // aborted by the test
        } finally {
          resolveDone();
        }
      })();
    })();
    this.started.catch(() => undefined); // surfaced by response()
    opened.push({ app, close: () => this.abort.abort() });
  }

  async response(): Promise<Response> {
    await this.started;
    return this.res;
  }
  /** Complete frames (each ends with a blank line). */
  get frames(): string[] {
    const parts = this.text.split('\n\n');
    return parts.slice(0, -1);
  }
  get messages(): Received[] {
    return this.frames
      .filter((f) => !f.startsWith(':'))
      .map((f) => {
        const lines = f.split('\n');
        const id = lines.find((l) => l.startsWith('id: '))?.slice(4) ?? '';
        const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? 'null';
        return { id, data: JSON.parse(data) as Payload };
      });
  }
  close(): void {
    this.abort.abort();
  }
}

async function ingest(
  t: TestApp,
  logGroup: string,
  events: (string | { message: string; timestamp?: number | string })[],
  options: { accountId?: string; logStream?: string; token?: string } = {},
): Promise<void> {
  const res = await t.request('POST', '/cloud/logs/local/events', {
    token: options.token ?? TOKENS.admin,
    body: {
      accountId: options.accountId ?? 'acc-a',
      region: REGION,
      logGroup,
      logStream: options.logStream ?? 's/1',
      events: events.map((e) => (typeof e === 'string' ? { message: e } : e)),
    },
  });
  expect(res.status, res.text).toBe(202);
}

/** Waits until the hub has served at least `n` more polls (so a write made before is surely read). */
async function polled(t: TestApp, n = 2): Promise<void> {
  const hub = t.services.streams.hub;
  const target = hub.polls + n;
  await waitFor(() => hub.polls >= target, `${n} more polls`);
}

async function settle(apps: Iterable<TestApp>): Promise<void> {
  for (const app of apps) {
    const streams = app.services.streams;
    await waitFor(
      () => streams.activeStreams === 0 && streams.hub.activePollers === 0,
      'every stream and poller to end',
      5_000,
    );
  }
}

afterEach(async () => {
  const apps = new Set(opened.map((o) => o.app));
  for (const o of opened.splice(0)) o.close();
  await settle(apps);
});

const base = (extra: Params = {}): Params => ({
  accountId: 'acc-a',
  logGroups: '/hist/web',
  logStreamPrefix: 'web/',
  ...extra,
});

// ---------------------------------------------------------------------------------------------------------------

describe('log stream, local provider', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: fixture(), config: FAST });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('history', () => {
    it('sends the history oldest first, then isFinal: true, and the server closes the connection', async () => {
      const c = new SseClient(
        t,
        base({ logGroups: '/hist/web', logStreamNames: 'web/1,web/2,job/1', logStreamPrefix: undefined }),
      );
      await c.untilFinal();
      expect(c.texts).toEqual(msgs('h1', 'h2', 'h3', 'h4', 'h5'));
      const last = c.messages[c.messages.length - 1]!;
      expect(last.data).toEqual({ events: [], isFinal: true });
      expect(c.messages.slice(0, -1).every((m) => !m.data.isFinal)).toBe(true);
      expect(c.serverErrors).toEqual([]);

      const raw = new RawStream(t, base());
      await raw.done;
      expect(raw.ended).toBe(true);
      expect(raw.messages.at(-1)!.data.isFinal).toBe(true);
    });

    it('gives each event exactly {logStreamName, message, timestamp, ingestionTime, level} with ISO 8601 UTC ms times', async () => {
      const c = new SseClient(t, base({ logStreamPrefix: 'web/1' }));
      await c.untilFinal();
      expect(c.events[0]).toStrictEqual({
        logStreamName: 'web/1',
        message: 'INFO web started',
        timestamp: '2024-01-15T12:00:01.000Z',
        ingestionTime: '2024-01-15T12:00:01.005Z',
        level: 'INFO',
      });
      for (const e of c.events) {
        expect(Object.keys(e).sort()).toEqual(['ingestionTime', 'level', 'logStreamName', 'message', 'timestamp']);
        expect(e.timestamp).toMatch(ISO_MS);
        expect(e.ingestionTime).toMatch(ISO_MS);
      }
      expect(c.events.map((e) => e.level)).toEqual(['INFO', 'WARN', 'INFO']);
    });

    it('sends a long history in batches of STREAM_BATCH_SIZE, losing and repeating nothing across a tie at a boundary', async () => {
      const c = new SseClient(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }));
      await c.untilFinal();
      expect(c.texts).toEqual(bulkMessages());
      expect(c.messages.map((m) => m.data.events.length)).toEqual([50, 50, 20, 0]);
    });

    it('keeps to startTime and endTime, both inclusive, as ISO 8601 or epoch ms', async () => {
      const iso = new SseClient(
        t,
        base({
          startTime: '2024-01-15T12:00:01.500Z',
          endTime: '2024-01-15T12:00:03Z',
          logGroups: '/hist/web,/hist/api',
        }),
      );
      const ms = new SseClient(
        t,
        base({ startTime: String(T0 + 1500), endTime: String(T0 + 3000), logGroups: ['/hist/web', '/hist/api'] }),
      );
      await iso.untilFinal();
      await ms.untilFinal();
      expect(iso.texts).toEqual(msgs('a1', 'h2', 'h4'));
      expect(ms.texts).toEqual(iso.texts);
    });

    it('never sends events written after endTime, even a default endTime of now', async () => {
      await ingest(t, '/live/after-end', [
        { message: 'old', timestamp: Date.now() - 60_000 },
        { message: 'future', timestamp: Date.now() + 3_600_000 },
      ]);
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: '/live/after-end', logStreamPrefix: 's/' });
      await c.untilFinal();
      expect(c.texts).toEqual(['old']);
    });
  });

  describe('stream selection and merging', () => {
    it('logStreamPrefix selects streams by prefix, logStreamNames by exact name (repeated or comma-separated)', async () => {
      const prefix = new SseClient(t, base({ logGroups: '/hist/web', logStreamPrefix: 'web/' }));
      const names = new SseClient(
        t,
        base({ logGroups: '/hist/web', logStreamPrefix: undefined, logStreamNames: 'web/2,job/1' }),
      );
      const repeated = new SseClient(
        t,
        base({ logGroups: '/hist/web', logStreamPrefix: undefined, logStreamNames: ['web/2', 'job/1'] }),
      );
      const exact = new SseClient(
        t,
        base({ logGroups: '/hist/web', logStreamPrefix: undefined, logStreamNames: 'web' }),
      );
      await Promise.all([prefix, names, repeated, exact].map((c) => c.untilFinal()));
      expect(prefix.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
      expect(names.texts).toEqual(msgs('h2', 'h3'));
      expect(repeated.texts).toEqual(names.texts);
      expect(exact.texts).toEqual([]);
    });

    it('takes a prefix literally (no LIKE wildcards)', async () => {
      const underscore = new SseClient(t, base({ logGroups: '/hist/api', logStreamPrefix: 'web_' }));
      const percent = new SseClient(t, base({ logGroups: '/hist/api', logStreamPrefix: '%' }));
      await Promise.all([underscore.untilFinal(), percent.untilFinal()]);
      expect(underscore.texts).toEqual(msgs('x2'));
      expect(percent.texts).toEqual([]);
    });

    it('merges several groups oldest first (ties by event id), with the same stream filter in each', async () => {
      const c = new SseClient(t, base({ logGroups: '/hist/web,/hist/api', logStreamPrefix: 'web/' }));
      await c.untilFinal();
      expect(c.texts).toEqual(msgs('h1', 'a1', 'h2', 'h4', 'h5', 'a3', 'a4'));
      const times = c.events.map((e) => Date.parse(e.timestamp));
      expect(times).toEqual([...times].sort((a, b) => a - b));

      const names = new SseClient(
        t,
        base({ logGroups: ['/hist/api', '/hist/web'], logStreamPrefix: undefined, logStreamNames: 'web/2,api/1' }),
      );
      await names.untilFinal();
      // h2 and a2 share a millisecond: the smaller event id first.
      expect(H.a2.eventId < H.h2.eventId).toBe(true);
      expect(names.texts).toEqual(msgs('a2', 'h2'));
    });

    it('de-duplicates a group named twice', async () => {
      const c = new SseClient(t, base({ logGroups: ['/hist/web', '/hist/web,/hist/web'] }));
      await c.untilFinal();
      expect(c.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
    });
  });

  describe('filter patterns', () => {
    it.each(PATTERNS)('%s: %s', async (_form, pattern, matches) => {
      const c = new SseClient(t, {
        accountId: 'acc-a',
        logGroups: '/fp',
        logStreamNames: 'fp/1',
        filterPattern: pattern,
      });
      await c.untilFinal();
      const expected = matches === 'all' ? FP_KEYS : matches;
      expect(c.texts).toEqual(expected.map((k) => FP[k]));
    });

    it('applies the pattern to live events too', async () => {
      const group = '/live/pattern';
      const json = new SseClient(t, {
        accountId: 'acc-a',
        logGroups: group,
        logStreamPrefix: 's/',
        tail: true,
        filterPattern: '{ $.level = "ERROR" && $.latency > 500 }',
      });
      const terms = new SseClient(t, {
        accountId: 'acc-a',
        logGroups: group,
        logStreamPrefix: 's/',
        tail: true,
        filterPattern: 'ERROR -timeout',
      });
      await Promise.all([json.open, terms.open]);
      await waitFor(() => t.services.streams.hub.activePollers === 2, 'one poller per pattern');
      await ingest(t, group, [FP.m1, FP.m2, FP.m5, FP.m6, FP.m7, 'ERROR plain']);
      await json.untilTexts(1);
      await terms.untilTexts(4);
      await polled(t);
      expect(json.texts).toEqual([FP.m5]);
      expect(terms.texts).toEqual([FP.m1, FP.m5, FP.m6, 'ERROR plain']);
    });
  });

  describe('live tail', () => {
    it('switches from history to tail with events written during the switch delivered exactly once, in order', async () => {
      const group = '/live/switch';
      const pre = Array.from({ length: 130 }, (_, i) => `pre ${i}`);
      await ingest(t, group, pre);
      // Two writers, each posting one event at a time, start before the stream opens and run past the switch.
      const written: string[][] = [[], []];
      let writing = true;
      const writers = [0, 1].map(async (w) => {
        for (let i = 0; writing; i++) {
          const message = `w${w} ${i}`;
          await ingest(t, group, [message]);
          written[w]!.push(message);
        }
      });
      await sleep(30);
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true });
      await c.until(() => c.texts.filter((m) => m.startsWith('w')).length >= 30, 'live events past the switch');
      await sleep(100);
      writing = false;
      await Promise.all(writers);
      const total = pre.length + written[0]!.length + written[1]!.length;
      await c.untilTexts(total);
      await polled(t, 3);
      expect(c.texts).toHaveLength(total);
      expect(c.texts.slice(0, pre.length)).toEqual(pre);
      expect(new Set(c.texts).size).toBe(total);
      // Each writer's events arrive in the order it wrote them.
      for (const w of [0, 1]) expect(c.texts.filter((m) => m.startsWith(`w${w} `))).toEqual(written[w]);
      for (const e of c.events) {
        expect(e.timestamp).toMatch(ISO_MS);
        expect(e.ingestionTime).toMatch(ISO_MS);
      }
      expect(c.final).toBe(false);
    });

    it('shares one upstream poll per interval among subscribers of the same query, and each gets every event', async () => {
      const group = '/live/shared';
      const params = { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true };
      const clients = [TOKENS.owner, TOKENS.admin, TOKENS.viewer].map((token) => new SseClient(t, params, { token }));
      await Promise.all(clients.map((c) => c.open));
      const hub = t.services.streams.hub;
      await waitFor(() => hub.activePollers === 1, 'the shared poller');
      const p0 = hub.polls;
      const t0 = Date.now();
      await ingest(t, group, ['one', 'two']);
      await Promise.all(clients.map((c) => c.untilTexts(2)));
      await sleep(500);
      const polls = hub.polls - p0;
      const intervals = (Date.now() - t0) / POLL_MS;
      expect(hub.activePollers).toBe(1);
      expect(polls).toBeGreaterThan(0);
      expect(polls).toBeLessThanOrEqual(intervals + 2);
      for (const c of clients) expect(c.texts).toEqual(['one', 'two']);

      // Another query is another poller.
      const other = new SseClient(t, { ...params, logStreamPrefix: 's/1' });
      await other.open;
      await waitFor(() => hub.activePollers === 2, 'a second poller');
    });

    it('keeps tenants apart: the same group name on another account is another poller with other events', async () => {
      const group = '/live/tenants';
      const a = new SseClient(t, { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true });
      const b = new SseClient(
        t,
        { accountId: 'acc-b', logGroups: group, logStreamPrefix: 's/', tail: true },
        { token: TOKENS.otherAdmin },
      );
      await Promise.all([a.open, b.open]);
      await waitFor(() => t.services.streams.hub.activePollers === 2, 'two pollers');
      await ingest(t, group, ['for a']);
      await ingest(t, group, ['for b'], { accountId: 'acc-b', token: TOKENS.otherAdmin });
      await Promise.all([a.untilTexts(1), b.untilTexts(1)]);
      await polled(t);
      expect(a.texts).toEqual(['for a']);
      expect(b.texts).toEqual(['for b']);
    });

    it('sends events whose stored timestamps lie past the date range (written below the API) without failing the stream', async () => {
      const group = '/live/far-future';
      // The API refuses such times; rows from elsewhere (an older version, a manual insert) may still hold them.
      const insertRaw = (message: string, timestamp: number, tag: string) =>
        sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level)
          values ('acc-a', ${REGION}, ${group}, 's/1', ${timestamp}, ${timestamp}, ${eventId(T0, tag)}, ${message}, 'INFO')`.execute(
          t.store.db,
        );
      await insertRaw('beyond what Date holds', 8_640_000_000_000_001, 'f1'); // new Date(ms).toISOString() throws
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true });
      await c.untilTexts(1);
      await waitFor(() => t.services.streams.hub.activePollers === 1, 'the poller');
      await insertRaw('in the year 10000', 253_402_300_800_000, 'f2'); // would be +010000-01-01T00:00:00.000Z
      await ingest(t, group, ['ordinary']);
      await c.untilTexts(3);
      await polled(t);
      expect(c.serverErrors).toEqual([]);
      expect(c.final).toBe(false);
      expect(c.texts).toEqual(['beyond what Date holds', 'in the year 10000', 'ordinary']);
      for (const e of c.events) {
        expect(e.timestamp).toMatch(ISO_MS);
        expect(e.ingestionTime).toMatch(ISO_MS);
      }
      expect(c.events[0]!.timestamp).toBe('9999-12-31T23:59:59.999Z');
      expect(c.events[1]!.timestamp).toBe('9999-12-31T23:59:59.999Z');
    });

    it('tails from startTime: a live event older than startTime is not sent', async () => {
      const group = '/live/start';
      const c = new SseClient(t, {
        accountId: 'acc-a',
        logGroups: group,
        logStreamPrefix: 's/',
        tail: true,
        startTime: new Date(Date.now() - 60_000).toISOString(),
      });
      await c.open;
      await waitFor(() => t.services.streams.hub.activePollers === 1, 'the poller');
      await ingest(t, group, [{ message: 'too old', timestamp: Date.now() - 3_600_000 }, 'fresh']);
      await c.untilTexts(1);
      await polled(t);
      expect(c.texts).toEqual(['fresh']);
    });
  });

  describe('framing', () => {
    it('frames every message as a default event with an id: and one data: line, and ends with isFinal', async () => {
      const raw = new RawStream(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }));
      const res = await raw.response();
      expect(res.status).toBe(200);
      await raw.done;
      expect(raw.ended).toBe(true);
      expect(raw.text.endsWith('\n\n')).toBe(true);
      const messages = raw.frames.filter((f) => !f.startsWith(':'));
      expect(messages.length).toBe(4);
      for (const frame of messages) {
        const lines = frame.split('\n');
        expect(lines).toHaveLength(2);
        expect(lines[0]).toMatch(/^id: [A-Za-z0-9_-]+$/);
        expect(lines[1]).toMatch(/^data: \{/);
        expect(frame).not.toMatch(/^event:/m);
        const data = JSON.parse(lines[1]!.slice(6)) as Payload;
        expect(Object.keys(data).sort()).toEqual(['events', 'isFinal']);
      }
      const payloads = raw.messages.map((m) => m.data);
      expect(payloads.map((p) => p.isFinal)).toEqual([false, false, false, true]);
      expect(payloads.flatMap((p) => p.events.map((e) => e.message))).toEqual(bulkMessages());
      expect(new Set(raw.messages.slice(0, 3).map((m) => m.id)).size).toBe(3);
    });

    it('gives the final message an id even when nothing came before it, which resumes to nothing new', async () => {
      const raw = new RawStream(t, base({ logStreamPrefix: 'nothing-here/' }));
      await raw.done;
      expect(raw.frames).toHaveLength(1);
      const [idLine, dataLine, ...rest] = raw.frames[0]!.split('\n');
      expect(rest).toEqual([]);
      expect(idLine).toMatch(/^id: [A-Za-z0-9_-]+$/);
      expect(JSON.parse(dataLine!.slice(6))).toEqual({ events: [], isFinal: true });
      // Resuming from it is the same empty history.
      const again = new SseClient(t, base({ logStreamPrefix: 'nothing-here/' }), { lastEventId: idLine!.slice(4) });
      await again.untilFinal();
      expect(again.texts).toEqual([]);
      // And it does not skip what was there: the same id on a stream with events starts at the beginning.
      const other = new SseClient(t, base(), { lastEventId: idLine!.slice(4) });
      await other.untilFinal();
      expect(other.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
    });

    it('answers with text/event-stream and headers that stop proxies from buffering', async () => {
      const raw = new RawStream(t, base());
      const res = await raw.response();
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('cache-control')).toMatch(/(^|,\s*)no-cache(,|$)/);
      expect(res.headers.get('x-accel-buffering')).toBe('no');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-request-id')).toMatch(/\S/);
      await raw.done;
    });

    it('sends ": keep-alive" comments while the tail is idle', async () => {
      const raw = new RawStream(t, { accountId: 'acc-a', logGroups: '/live/idle', logStreamPrefix: 's/', tail: true });
      await raw.response();
      await waitFor(
        () => raw.frames.filter((f) => f === ': keep-alive').length >= 3,
        'three keep-alive comments',
        5_000,
      );
      expect(raw.frames.every((f) => f === ': keep-alive')).toBe(true);
      raw.close();
    });

    it('answers a refused request with an error response, which EventSource takes as a failed connection', async () => {
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: '/hist/web' });
      await expect(c.open).rejects.toThrow();
      expect(c.failures[0]?.code).toBe(400);
      expect(c.es.readyState).toBe(EventSource.CLOSED);
    });
  });

  describe('resume with Last-Event-ID', () => {
    it('continues a history from the event after the id, over a tie, without loss or repeat', async () => {
      const first = new SseClient(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }));
      await first.until(() => first.messages.length >= 1, 'the first batch');
      first.close();
      const id = first.messages[0]!.id;
      expect(first.messages[0]!.data.events.map((e) => e.message)).toEqual(bulkMessages(0, 50));
      const second = new SseClient(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }), { lastEventId: id });
      await second.untilFinal();
      expect(second.texts).toEqual(bulkMessages(50));
      // Each later id resumes exactly after its own batch.
      const third = new SseClient(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }), {
        lastEventId: second.messages[0]!.id,
      });
      await third.untilFinal();
      expect(third.texts).toEqual(bulkMessages(100));
      // The final id resumes to nothing but isFinal.
      const fourth = new SseClient(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/' }), {
        lastEventId: second.lastId,
      });
      await fourth.untilFinal();
      expect(fourth.texts).toEqual([]);
    });

    it('ignores an id it did not issue, starting over', async () => {
      const c = new SseClient(t, base(), { lastEventId: 'not-an-id' });
      await c.untilFinal();
      expect(c.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
    });

    it('resumed in the history of a tail, continues the history and then the tail from the original switch point', async () => {
      const group = '/live/resume-history';
      const pre = Array.from({ length: 120 }, (_, i) => `pre ${i}`);
      await ingest(t, group, pre);
      const params = { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true };
      const first = new SseClient(t, params);
      await first.until(() => first.messages.length >= 1, 'the first batch');
      first.close();
      const id = first.messages[0]!.id;
      await ingest(t, group, ['x1', 'x2']); // after the first stream's switch point, while nobody listens
      const second = new SseClient(t, params, { lastEventId: id });
      await second.untilTexts(70 + 2);
      await ingest(t, group, ['y1']);
      await second.untilTexts(73);
      await polled(t);
      expect(second.texts).toEqual([...pre.slice(50), 'x1', 'x2', 'y1']);
    });

    it('resumed in the tail, sends what was written while disconnected, and no history', async () => {
      const group = '/live/resume-tail';
      await ingest(t, group, ['history']);
      const params = { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true };
      const first = new SseClient(t, params);
      await first.untilTexts(1);
      await waitFor(() => t.services.streams.hub.activePollers === 1, 'the poller');
      await ingest(t, group, ['e1']);
      await ingest(t, group, ['e2']);
      await first.untilTexts(3);
      first.close();
      const id = first.lastId;
      await settle([t]);
      await ingest(t, group, ['e3', 'e4']);
      const second = new SseClient(t, params, { lastEventId: id });
      await second.untilTexts(2);
      await ingest(t, group, ['e5']);
      await second.untilTexts(3);
      await polled(t);
      expect(first.texts).toEqual(['history', 'e1', 'e2']);
      expect(second.texts).toEqual(['e3', 'e4', 'e5']);
    });

    it('gives each message of a large tail delivery the id that resumes right after its own events', async () => {
      const group = '/live/resume-chunks';
      const params = { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true };
      const raw = new RawStream(t, params);
      await raw.response();
      await waitFor(() => t.services.streams.hub.activePollers === 1, 'the poller');
      const burst = Array.from({ length: 120 }, (_, i) => `burst ${i}`);
      // One ingest request, sent as messages of at most 50 events. Ingest commits in chunks of at least 50 rows
      // (about DB_SLICE_MS each), so a poll may read the burst whole ([50, 50, 20]) or one chunk at a time.
      await ingest(t, group, burst);
      await waitFor(() => raw.messages.flatMap((m) => m.data.events).length === 120, 'the burst');
      const messages = raw.messages;
      const sizes = messages.map((m) => m.data.events.length);
      expect(sizes.every((n) => n >= 1 && n <= 50)).toBe(true);
      expect(sizes).toContain(50);
      expect(messages.flatMap((m) => m.data.events.map((e: { message: string }) => e.message))).toEqual(burst);
      expect(new Set(messages.map((m) => m.id)).size).toBe(messages.length);
      raw.close();
      // A connection lost after any one message resumes with exactly the events after it.
      let from = 0;
      for (const [i, message] of messages.entries()) {
        from += message.data.events.length;
        const c = new SseClient(t, params, { lastEventId: message.id });
        await c.open;
        await ingest(t, group, [`after ${i}`]);
        // The rest of the burst, then what earlier rounds wrote after it, then this round's event.
        const expected = [...burst.slice(from), ...Array.from({ length: i + 1 }, (_, k) => `after ${k}`)];
        await c.untilTexts(expected.length);
        await polled(t);
        expect(c.texts).toEqual(expected);
        c.close();
        await settle([t]);
      }
    });

    it('lets EventSource reconnect by itself after a dropped connection, without loss or repeat', async () => {
      const group = '/live/reconnect';
      await ingest(t, group, ['h1', 'h2']);
      const c = new SseClient(
        t,
        { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true },
        { cuttable: true },
      );
      await c.untilTexts(2);
      await waitFor(() => t.services.streams.hub.activePollers === 1, 'the poller');
      await ingest(t, group, ['l1']);
      await c.untilTexts(3);
      c.cut!();
      await settle([t]); // the server noticed the dropped connection
      await ingest(t, group, ['while away 1', 'while away 2']);
      await c.until(() => c.attempts.length === 2 && c.es.readyState === EventSource.OPEN, 'the reconnect', 10_000);
      expect(c.attempts[1]!['Last-Event-ID']).toBe(c.messages[c.messages.length - 1]!.id);
      await c.untilTexts(5);
      await ingest(t, group, ['after']);
      await c.untilTexts(6);
      await polled(t);
      expect(c.texts).toEqual(['h1', 'h2', 'l1', 'while away 1', 'while away 2', 'after']);
    });
  });

  describe('client disconnect', () => {
    it('stops upstream polls within one interval and frees the stream slot', async () => {
      const hub = t.services.streams.hub;
      const c = new SseClient(t, {
        accountId: 'acc-a',
        logGroups: '/live/disconnect',
        logStreamPrefix: 's/',
        tail: true,
      });
      await c.open;
      await waitFor(() => hub.activePollers === 1 && t.services.streams.activeStreams === 1, 'the poller');
      await polled(t, 3);
      c.close();
      await waitFor(
        () => hub.activePollers === 0 && t.services.streams.activeStreams === 0,
        'the poller to stop',
        2_000,
      );
      const after = hub.polls;
      await sleep(POLL_MS * 6);
      expect(hub.polls).toBe(after);
    });

    it('releases a stream closed in the middle of its history', async () => {
      const raw = new RawStream(t, base({ logGroups: '/bulk', logStreamPrefix: 'b/', tail: true }));
      await raw.response();
      raw.close();
      await settle([t]);
      expect(t.services.streams.hub.activePollers).toBe(0);
    });
  });

  describe('who may stream', () => {
    it('lets a viewer stream', async () => {
      const c = new SseClient(t, base(), { token: TOKENS.viewer });
      await c.untilFinal();
      expect(c.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
    });

    it('shows each organization only its own account', async () => {
      const b = new SseClient(
        t,
        { accountId: 'acc-b', logGroups: '/hist/web', logStreamPrefix: 'web/' },
        { token: TOKENS.otherAdmin },
      );
      await b.untilFinal();
      expect(b.texts).toEqual(msgs('b1'));
      const a = new SseClient(t, base({ logStreamPrefix: 'web/1' }), { token: TOKENS.multiOrg });
      await a.untilFinal();
      expect(a.texts).toEqual(msgs('h1', 'h4', 'h5'));
    });

    it("answers another organization's account exactly like a missing one (404)", async () => {
      const other = await t.request('GET', `${PATH}?${query(base())}`, { token: TOKENS.otherAdmin });
      const missing = await t.request('GET', `${PATH}?${query(base({ accountId: 'acc-nope' }))}`, {
        token: TOKENS.otherAdmin,
      });
      const reverse = await t.request(
        'GET',
        `${PATH}?${query({ accountId: 'acc-b', logGroups: '/hist/web', logStreamPrefix: 'web/' })}`,
        { token: TOKENS.owner },
      );
      expectError(other, 404, 'logs:account:not-found');
      expectError(missing, 404, 'logs:account:not-found');
      expectError(reverse, 404, 'logs:account:not-found');
      expect(other.body.message).toBe(missing.body.message);
      expect(other.text).not.toContain('org b secret');
      expect(reverse.text).not.toContain('org b secret');
    });

    it('refuses a missing or bad token with 401', async () => {
      const none = await t.request('GET', `${PATH}?${query(base())}`);
      expectError(none, 401, 'auth:token:missing');
      for (const token of ['berth_nope_nope', TOKENS.expired, TOKENS.revoked]) {
        expectError(await t.request('GET', `${PATH}?${query(base())}`, { token }), 401, 'auth:token:invalid');
      }
    });
  });

  describe('bad parameters are ordinary error responses', () => {
    const cases: [string, Params, number, string][] = [
      ['no logGroups', { accountId: 'acc-a', logStreamPrefix: 'web/' }, 400, 'validation:request:invalid-query'],
      [
        'an empty logGroups',
        { accountId: 'acc-a', logGroups: '', logStreamPrefix: 'web/' },
        400,
        'validation:request:invalid-query',
      ],
      [
        'logGroups with only commas',
        { accountId: 'acc-a', logGroups: ',, ,', logStreamPrefix: 'web/' },
        400,
        'logs:stream:invalid-parameters',
      ],
      [
        'more than 50 log groups',
        {
          accountId: 'acc-a',
          logGroups: Array.from({ length: 51 }, (_, i) => `/g${i}`).join(','),
          logStreamPrefix: 'web/',
        },
        400,
        'logs:stream:invalid-parameters',
      ],
      [
        'both logStreamPrefix and logStreamNames',
        base({ logStreamNames: 'web/1' }),
        400,
        'logs:stream:invalid-parameters',
      ],
      [
        'neither logStreamPrefix nor logStreamNames',
        base({ logStreamPrefix: undefined }),
        400,
        'logs:stream:invalid-parameters',
      ],
      [
        'an empty logStreamPrefix and logStreamNames',
        base({ logStreamPrefix: '', logStreamNames: 'web/1' }),
        400,
        'logs:stream:invalid-parameters',
      ],
      ['no accountId', { logGroups: '/hist/web', logStreamPrefix: 'web/' }, 400, 'validation:request:invalid-query'],
      ['an unknown account', base({ accountId: 'acc-nope' }), 404, 'logs:account:not-found'],
      ['a startTime that is no time', base({ startTime: 'yesterday' }), 400, 'validation:request:invalid-query'],
      [
        'an endTime past the end of its month',
        base({ endTime: '2024-02-30T00:00:00Z' }),
        400,
        'validation:request:invalid-query',
      ],
      [
        'startTime after endTime',
        base({ startTime: '2024-01-15T13:00:00Z', endTime: '2024-01-15T12:00:00Z' }),
        400,
        'logs:stream:invalid-parameters',
      ],
      ['tail that is not a boolean', base({ tail: 'maybe' }), 400, 'validation:request:invalid-query'],
      ['an unknown parameter', base({ logGroup: '/hist/web' }), 400, 'validation:request:invalid-query'],
    ];
    it.each(cases)('%s', async (_name, params, status, code) => {
      const res = await t.request('GET', `${PATH}?${query(params)}`, { token: TOKENS.owner });
      expectError(res, status, code);
    });

    it.each([
      ['logGroups', { logGroups: '/hist/web\u0000' }],
      ['logGroups', { logGroups: '/hist/web,/hist/\u0000api' }],
      ['logGroups', { logGroups: ['/hist/web', '/hist/\u0001api'] }],
      ['logStreamPrefix', { logStreamPrefix: 'web/\u0000' }],
      ['logStreamPrefix', { logStreamPrefix: 'web/\n' }],
      ['logStreamNames', { logStreamPrefix: undefined, logStreamNames: 'web/1,web/\u00002' }],
      ['logStreamNames', { logStreamPrefix: undefined, logStreamNames: ['web/1', 'web/\u001f'] }],
      ['region', { region: 'eu-west-1\u0000' }],
      ['region', { region: 'eu-west-1\u007f' }],
    ] as [string, Params][])(
      'a NUL or control character in %s is 400 naming it, not a failure inside the stream',
      async (param, extra) => {
        const res = await t.request('GET', `${PATH}?${query(base(extra))}`, { token: TOKENS.owner });
        expectError(res, 400, 'validation:request:invalid-query');
        expect(JSON.stringify(res.body.details)).toContain(`query.${param}`);
      },
    );

    it('takes at most 100 stream names, counted after splitting comma-separated values (repeats count once)', async () => {
      const names = Array.from({ length: 101 }, (_, i) => `n/${i}`);
      for (const logStreamNames of [names.join(','), [names.slice(0, 60).join(','), names.slice(60).join(',')]]) {
        const res = await t.request('GET', `${PATH}?${query(base({ logStreamPrefix: undefined, logStreamNames }))}`, {
          token: TOKENS.owner,
        });
        expectError(res, 400, 'logs:stream:invalid-parameters');
        expect(res.body.metadata).toEqual({ parameter: 'logStreamNames' });
      }
      const hundred = new SseClient(
        t,
        base({ logStreamPrefix: undefined, logStreamNames: [...names.slice(0, 99), 'web/1', 'web/1,web/1'].join(',') }),
      );
      await hundred.untilFinal();
      expect(hundred.texts).toEqual(msgs('h1', 'h4', 'h5'));
    });

    it('refuses a startTime or endTime past 9999-12-31T23:59:59.999Z with 400 naming it', async () => {
      for (const field of ['startTime', 'endTime']) {
        const res = await t.request('GET', `${PATH}?${query(base({ [field]: '253402300800000' }))}`, {
          token: TOKENS.owner,
        });
        expectError(res, 400, 'validation:request:invalid-query');
        expect(JSON.stringify(res.body.details)).toContain(`query.${field}`);
      }
      const last = new SseClient(t, base({ startTime: '0', endTime: '253402300799999' }));
      await last.untilFinal();
      expect(last.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
    });

    it('names the bad time parameter', async () => {
      const res = await t.request('GET', `${PATH}?${query(base({ startTime: 'yesterday' }))}`, { token: TOKENS.owner });
      expectError(res, 400);
      expect(JSON.stringify(res.body)).toContain('startTime');
      expect(JSON.stringify(res.body)).not.toContain('body.');
    });

    it.each([
      ['{ $.level = ', 12],
      ['ERROR "unterminated', 6],
      ['[a, b', 5],
      ['%(x)%', 1],
      ['""', 0],
    ])('a filter pattern that does not parse (%s) is 400 with the position of the fault', async (pattern, position) => {
      const res = await t.request('GET', `${PATH}?${query(base({ filterPattern: pattern }))}`, { token: TOKENS.owner });
      expectError(res, 400, 'logs:filter-pattern:invalid');
      expect(res.body.metadata).toEqual({ position });
      expect(res.body.message).toMatch(new RegExp(`at position ${position}$`));
    });
  });
});

/** The local source, with a switch that makes its reads fail (an upstream failure after the stream started). */
class FlakySource extends LocalStreamSource {
  failHistory = false;
  failRead = false;
  override async *history(...args: Parameters<LocalStreamSource['history']>): ReturnType<LocalStreamSource['history']> {
    for await (const batch of super.history(...args)) {
      yield batch;
      if (this.failHistory) throw new Error('history exploded');
    }
  }
  override async read(...args: Parameters<LocalStreamSource['read']>): ReturnType<LocalStreamSource['read']> {
    if (this.failRead) throw new Error('read exploded');
    return super.read(...args);
  }
  override async readTogether(
    ...args: Parameters<LocalStreamSource['readTogether']>
  ): ReturnType<LocalStreamSource['readTogether']> {
    if (this.failRead) throw new Error('read exploded');
    return super.readTogether(...args);
  }
}

describe('log stream limits and failures', () => {
  let t: TestApp;
  let flaky: FlakySource;
  beforeAll(async () => {
    t = await startTestApp({
      fixture: fixture(),
      config: { ...FAST, STREAM_MAX_PER_PRINCIPAL: 2 },
      services: (store, config) => {
        const services = createServices(store, config);
        flaky = new FlakySource(store.db);
        const streams = new LogStreamService(
          store.db,
          { local: flaky },
          {
            pollIntervalMs: config.STREAM_POLL_INTERVAL_MS,
            keepAliveMs: config.STREAM_KEEPALIVE_MS,
            maxPerPrincipal: config.STREAM_MAX_PER_PRINCIPAL,
            maxDurationMs: config.STREAM_MAX_DURATION_MS,
            batchSize: config.STREAM_BATCH_SIZE,
            filters: services.filters,
          },
        );
        const close = services.close;
        return { ...services, streams, close: async () => (streams.close(), close()) };
      },
    });
  });
  afterEach(() => {
    flaky.failHistory = false;
    flaky.failRead = false;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('caps concurrent streams per principal (429 with Retry-After) and frees a slot when a stream ends', async () => {
    const params = { accountId: 'acc-a', logGroups: '/live/cap', logStreamPrefix: 's/', tail: true };
    const one = new SseClient(t, params);
    const two = new SseClient(t, params, { token: TOKENS.ownerUnscoped }); // another key of the same principal
    await Promise.all([one.open, two.open]);
    const third = await t.request('GET', `${PATH}?${query(params)}`, { token: TOKENS.owner });
    expectError(third, 429, 'logs:stream:too-many-streams');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another principal is not affected.
    const admin = new SseClient(t, params, { token: TOKENS.admin });
    await admin.open;
    // A refused EventSource sees the 429 too.
    const refused = new SseClient(t, params);
    await expect(refused.open).rejects.toThrow();
    expect(refused.failures[0]?.code).toBe(429);
    // Closing one frees its slot.
    one.close();
    await waitFor(() => t.services.streams.activeStreams === 2, 'the closed stream to be released');
    const again = new SseClient(t, params);
    await again.open;
    await ingest(t, '/live/cap', ['seen by all']);
    await Promise.all([two, admin, again].map((c) => c.untilTexts(1)));
  });

  it('sends a failure in the tail as `event: error` with the error object, then isFinal: true, and closes', async () => {
    const group = '/live/fail-tail';
    const raw = new RawStream(t, { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true });
    const c = new SseClient(
      t,
      { accountId: 'acc-a', logGroups: group, logStreamPrefix: 's/', tail: true },
      { token: TOKENS.admin },
    );
    await c.open;
    await waitFor(
      () => t.services.streams.hub.activePollers === 1 && t.services.streams.activeStreams === 2,
      'both in the tail',
    );
    await ingest(t, group, ['before the failure']);
    await c.untilTexts(1);
    flaky.failRead = true;
    await c.untilFinal();
    await raw.done;
    expect(raw.ended).toBe(true);
    expect(c.serverErrors).toHaveLength(1);
    const error = c.serverErrors[0]!;
    expect(error.code).toBe('logs:upstream:failed');
    expect(typeof error.message).toBe('string');
    expect(error.isInternal).toBeUndefined();
    expect(JSON.stringify(error)).not.toContain('exploded');
    const frames = raw.frames.filter((f) => !f.startsWith(':'));
    const errorAt = frames.findIndex((f) => f.startsWith('event: error\n'));
    expect(errorAt).toBeGreaterThanOrEqual(0);
    expect(frames[errorAt]!.split('\n')).toHaveLength(2);
    expect(JSON.parse(frames[errorAt]!.split('\n')[1]!.slice(6))).toMatchObject({ code: 'logs:upstream:failed' });
    expect(raw.messages.at(-1)!.data).toEqual({ events: [], isFinal: true });
    expect(frames.length).toBe(errorAt + 2);
  });

  it('sends a failure in the middle of the history as `event: error`, then isFinal: true', async () => {
    flaky.failHistory = true;
    const c = new SseClient(t, { accountId: 'acc-a', logGroups: '/bulk', logStreamPrefix: 'b/' });
    await c.untilFinal();
    expect(c.texts).toEqual(bulkMessages(0, 50));
    expect(c.serverErrors.map((e) => e.code)).toEqual(['logs:upstream:failed']);
    // The id of the last batch still resumes where the failure struck.
    flaky.failHistory = false;
    const again = new SseClient(
      t,
      { accountId: 'acc-a', logGroups: '/bulk', logStreamPrefix: 'b/' },
      { lastEventId: c.lastId },
    );
    await again.untilFinal();
    expect(again.texts).toEqual(bulkMessages(50));
  });

  it('releases a stream whose client hung up before the stream started', async () => {
    const url = new URL(t.url);
    const path = `${PATH}?${query({ accountId: 'acc-a', logGroups: '/live/hangup', logStreamPrefix: 's/', tail: true })}`;
    // The account lookup waits for this lock, so the client is gone before the stream starts.
    let locked!: () => void;
    const lockHeld = new Promise<void>((resolve) => (locked = resolve));
    const holder = t.store.db.transaction().execute(async (trx) => {
      await sql`lock table cloud_accounts in access exclusive mode`.execute(trx);
      locked();
      await sleep(400);
    });
    await lockHeld;
    await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<void>((resolve, reject) => {
            const socket = connect(Number(url.port), url.hostname, () => {
              socket.write(
                `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKENS.member}\r\nAccept: text/event-stream\r\n\r\n`,
              );
              setTimeout(() => socket.destroy(), 100);
              socket.on('close', () => resolve());
            });
            socket.on('error', reject);
          }),
      ),
    );
    await holder;
    await settle([t]);
    // Every slot of the principal is free again.
    const c = new SseClient(
      t,
      { accountId: 'acc-a', logGroups: '/live/hangup', logStreamPrefix: 's/', tail: true },
      { token: TOKENS.member },
    );
    await c.open;
  });

  it('frees the slot of a stream that ended by itself (history without tail)', async () => {
    for (let i = 0; i < 4; i++) {
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: '/hist/web', logStreamPrefix: 'web/' });
      await c.untilFinal();
      await waitFor(() => t.services.streams.activeStreams === 0, 'the stream to be released');
    }
  });
});

describe('log stream session length and shutdown', () => {
  it('ends a tail after STREAM_MAX_DURATION_MS with isFinal: true', async () => {
    const t = await startTestApp({ fixture: fixture(), config: { ...FAST, STREAM_MAX_DURATION_MS: 1_000 } });
    try {
      const started = Date.now();
      const raw = new RawStream(t, { accountId: 'acc-a', logGroups: '/hist/web', logStreamPrefix: 'web/', tail: true });
      const c = new SseClient(t, { accountId: 'acc-a', logGroups: '/hist/web', logStreamPrefix: 'web/', tail: true });
      await raw.done;
      expect(raw.ended).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      const last = raw.messages.at(-1)!;
      expect(last.data).toEqual({ events: [], isFinal: true });
      expect(raw.messages.flatMap((m) => m.data.events.map((e) => e.message))).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
      await c.untilFinal(5_000);
      expect(c.texts).toEqual(msgs('h1', 'h2', 'h4', 'h5'));
      await settle([t]);
    } finally {
      for (const o of opened.splice(0)) o.close();
      await t.close();
    }
  });

  it.each([
    ['services.close()', (t: TestApp) => t.services.close()],
    ['app.close()', (t: TestApp) => t.app.close()],
  ])('ends every stream with isFinal: true on shutdown through %s', async (_how, shutDown) => {
    const t = await startTestApp({ fixture: fixture(), config: FAST });
    try {
      const params = { accountId: 'acc-a', logGroups: '/hist/web', logStreamPrefix: 'web/', tail: true };
      const c = new SseClient(t, params);
      const raw = new RawStream(t, params, { token: TOKENS.admin });
      await c.untilTexts(4);
      await waitFor(() => raw.messages.length >= 1 && t.services.streams.hub.activePollers === 1, 'both in the tail');
      const closing = shutDown(t);
      await Promise.race([raw.done, sleep(5_000)]);
      expect(raw.ended, 'the server ends the response').toBe(true);
      expect(raw.messages.at(-1)!.data).toEqual({ events: [], isFinal: true });
      await c.untilFinal(5_000);
      await closing;
      expect(t.services.streams.activeStreams).toBe(0);
      expect(t.services.streams.hub.activePollers).toBe(0);
    } finally {
      for (const o of opened.splice(0)) o.close();
      await t.close();
    }
  });

  it('ends open streams with isFinal: true when a real `berth serve` gets SIGTERM, and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-stream-'));
    const server = await startServerProcess(['--demo'], { BERTH_DATA_DIR: dir, STREAM_POLL_INTERVAL_MS: '50' });
    try {
      const headers = { authorization: `Bearer ${DEMO_TOKEN}`, 'content-type': 'application/json' };
      const target = {
        accountId: 'acct-acme-local',
        region: 'eu-west-1',
        logGroup: '/shutdown/test',
        logStream: 's/1',
      };
      const post = (message: string) =>
        fetch(`${server.url}/cloud/logs/local/events`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ ...target, events: [{ message }] }),
        });
      expect((await post('before')).status).toBe(202);
      const qs = query({
        accountId: 'acct-acme-local',
        region: 'eu-west-1',
        logGroups: '/shutdown/test',
        logStreamPrefix: 's/',
        tail: true,
      });
      const res = await fetch(`${server.url}${PATH}?${qs}`, { headers: { authorization: `Bearer ${DEMO_TOKEN}` } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const readAll = (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          text += decoder.decode(value, { stream: true });
        }
      })();
      const payloads = () =>
        text
          .split('\n\n')
          .filter((f) => f.startsWith('id: '))
          .map((f) => JSON.parse(f.split('\n')[1]!.slice(6)) as Payload);
      await waitFor(() => payloads().length >= 1, 'the history');
      expect((await post('live')).status).toBe(202);
      await waitFor(() => payloads().flatMap((p) => p.events).length >= 2, 'the live event');
      server.child.kill('SIGTERM');
      await readAll; // the server ended the response
      const all = payloads();
      expect(all.flatMap((p) => p.events.map((e) => e.message))).toEqual(['before', 'live']);
      expect(all.at(-1)).toEqual({ events: [], isFinal: true });
      expect(await server.exited, server.output()).toBe(0);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
