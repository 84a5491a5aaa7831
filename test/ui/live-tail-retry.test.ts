// When the live tail reconnects and when it stops: the backoff arithmetic; a scripted server (injected fetch and
// timers) for network failures, 503/429 with Retry-After, `retry:`, drops, `event: error`, isFinal and the idle
// watchdog; and a real Berth for its 429 (too many streams) and its final message (STREAM_MAX_DURATION_MS).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveTail, type LiveTailOptions, type TailTimers } from '../../ui/src/lib/live-tail.js';
import { backoffDelay, retryAfterMs } from '../../ui/src/lib/retry-delay.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';
import { collector, recordingFetch, until } from './support/tail-harness.js';

describe('backoff arithmetic', () => {
  const b = { initialMs: 1_000, maxMs: 30_000 };
  it('doubles from the initial wait up to the cap, jittered between half and all of it', () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n, b, () => 0))).toEqual([500, 1_000, 2_000, 4_000, 15_000]);
    expect([0, 1, 10].map((n) => backoffDelay(n, b, () => 0.999_999))).toEqual([1_000, 2_000, 30_000]);
  });
  it("takes the server's retry: as the base and never waits less", () => {
    expect(backoffDelay(0, b, () => 0, 5_000)).toBe(5_000);
    expect(backoffDelay(2, b, () => 0, 5_000)).toBe(10_000);
    expect(backoffDelay(9, b, () => 0.999_999, 60_000)).toBe(60_000);
  });
  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('5', 0)).toBe(5_000);
    expect(retryAfterMs('Thu, 01 Jan 1970 00:00:10 GMT', 4_000)).toBe(6_000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });
});

/** Timers fired by hand: what was scheduled, with its wait. */
function manualTimers() {
  const pending = new Map<number, { fn: () => void; ms: number }>();
  let n = 0;
  const timers: TailTimers = {
    setTimeout: (fn, ms) => {
      pending.set(++n, { fn, ms });
      return n;
    },
    clearTimeout: (h) => void pending.delete(h as number),
  };
  const waits = () => [...pending.values()].map((p) => p.ms);
  const fire = () => {
    const [id, p] = [...pending][0]!;
    pending.delete(id);
    p.fn();
  };
  return { timers, pending, waits, fire };
}

type Script = () => Response | Promise<Response>;
const sse = (text: string, end = true) =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(text));
        if (end) c.close();
      },
    }),
    { headers: { 'content-type': 'text/event-stream; charset=utf-8' } },
  );
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const frame = (id: string, messages: string[], isFinal = false) =>
  `id: ${id}\ndata: ${JSON.stringify({ events: messages.map((message) => ({ message })), isFinal })}\n\n`;

function scripted(steps: Script[], over: Partial<LiveTailOptions> = {}) {
  const calls: Record<string, string>[] = [];
  const t = manualTimers();
  const c = collector();
  const lt = new LiveTail({
    groups: [{ accountId: 'a', region: 'r', logGroups: ['g'], logStreamPrefix: 'p' }],
    token: 'tok',
    baseUrl: 'http://berth.test',
    random: () => 0,
    idleTimeoutMs: 0,
    timers: t.timers,
    fetch: async (_url, init) => {
      calls.push({ ...(init?.headers as Record<string, string>) });
      const step = steps.shift();
      if (step === undefined) throw new Error('no more steps');
      return step();
    },
    ...c,
    ...over,
  });
  lt.start();
  return { lt, calls, t, c };
}

describe('reconnecting against a scripted server', () => {
  it('network failure, 503 with Retry-After, retry: and a drop: waits as told, resumes from the last id', async () => {
    const { lt, calls, t, c } = scripted([
      () => Promise.reject(new TypeError('fetch failed')),
      () => json(503, { code: 'internal:server:unavailable', message: 'busy' }, { 'retry-after': '3' }),
      () => sse(`retry: 5000\n${frame('id-1', ['one'])}`),
      () => sse(frame('id-2', ['two'], true)),
    ]);
    await until(() => t.pending.size === 1, 'the first retry');
    expect(t.waits()).toEqual([500]);
    expect(lt.status.streams[0]).toMatchObject({
      state: 'reconnecting',
      attempt: 1,
      error: { code: 'client:stream:network' },
    });
    t.fire();
    await until(() => t.pending.size === 1, 'the second retry');
    expect(t.waits()).toEqual([3_000]);
    expect(lt.status.streams[0]).toMatchObject({ httpStatus: 503, error: { code: 'internal:server:unavailable' } });
    t.fire();
    await until(() => t.pending.size === 1, 'the retry after the drop');
    expect(t.waits()).toEqual([5_000]);
    expect(lt.status.streams[0]).toMatchObject({ state: 'reconnecting', attempt: 1, lastEventId: 'id-1' });
    t.fire();
    await until(() => lt.state === 'ended', 'the end');
    expect(calls.map((h) => h['last-event-id'])).toEqual([undefined, undefined, undefined, 'id-1']);
    expect(c.messages()).toEqual(['one', 'two']);
    expect(t.pending.size).toBe(0);
  });

  it('a 429 waits for its Retry-After; a 400 is final', async () => {
    const { lt, t } = scripted([
      () => json(429, { code: 'logs:stream:too-many-streams', message: 'no' }, { 'retry-after': '7' }),
      () => json(400, { code: 'logs:stream:invalid-parameters', message: 'bad' }),
    ]);
    await until(() => t.pending.size === 1, 'the retry');
    expect(t.waits()).toEqual([7_000]);
    t.fire();
    await until(() => lt.state === 'error', 'error');
    expect(lt.status).toMatchObject({
      error: { code: 'logs:stream:invalid-parameters' },
      streams: [{ httpStatus: 400 }],
    });
    expect(t.pending.size).toBe(0);
  });

  it('event: error then isFinal ends in error with that object, not retried', async () => {
    const { lt, t } = scripted([
      () =>
        sse(
          `${frame('id-1', ['x'])}event: error\ndata: {"code":"logs:upstream:failed","message":"m"}\n\n${frame('id-1', [], true)}`,
        ),
    ]);
    await until(() => lt.state === 'error', 'error');
    expect(lt.status.error).toEqual({ code: 'logs:upstream:failed', message: 'm' });
    expect(t.pending.size).toBe(0);
  });

  it('a silent connection is dropped by the idle watchdog and reconnected', async () => {
    const { lt, calls, t } = scripted([() => sse(frame('id-1', ['x']), false), () => sse(frame('id-2', [], true))], {
      idleTimeoutMs: 45_000,
    });
    await until(() => lt.state === 'live' && t.waits().includes(45_000), 'the watchdog');
    t.fire();
    await until(() => lt.state === 'reconnecting', 'reconnecting');
    expect(lt.status.streams[0]!.error?.code).toBe('client:stream:idle');
    t.fire();
    await until(() => lt.state === 'ended', 'ended');
    expect(calls[1]!['last-event-id']).toBe('id-1');
  });

  it('an answer that is not an event stream is an error', async () => {
    const { lt } = scripted([() => new Response('<html>', { headers: { 'content-type': 'text/html' } })]);
    await until(() => lt.state === 'error', 'error');
    expect(lt.status.error?.code).toBe('client:stream:not-an-event-stream');
  });
});

describe('against Berth: too many streams, and the final message', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      fixture: mergeWorld(baseWorld(), {
        cloudAccounts: [{ id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' }],
      }),
      config: { STREAM_POLL_INTERVAL_MS: 100, STREAM_MAX_PER_PRINCIPAL: 1, STREAM_MAX_DURATION_MS: 1_500 },
    });
  });
  afterAll(async () => t?.close());
  const group = { accountId: 'local-a', region: 'eu-west-1', logGroups: ['app'], logStreamPrefix: 'web/' };

  it("waits out the 429's Retry-After, goes live once a slot is free, and ends at isFinal without reconnecting", async () => {
    const other = await openSse(t.url, TOKENS.viewer, { ...group, logGroups: 'app', tail: true });
    const c = collector();
    const rec = recordingFetch();
    const scheduled: number[] = [];
    const lt = new LiveTail({
      groups: [group],
      token: TOKENS.viewer,
      baseUrl: t.url,
      fetch: rec.fetch,
      ...c,
      idleTimeoutMs: 0,
      // Waits are recorded as asked and run 50 times faster.
      timers: {
        setTimeout: (fn, ms) => {
          scheduled.push(ms);
          return setTimeout(fn, ms / 50);
        },
        clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
      },
    });
    try {
      lt.start();
      await until(() => lt.state === 'reconnecting', 'the 429');
      expect(lt.status.streams[0]).toMatchObject({ httpStatus: 429, error: { code: 'logs:stream:too-many-streams' } });
      expect(lt.status.streams[0]!.retryInMs).toBeGreaterThanOrEqual(5_000);
      other.close();
      await until(() => lt.state === 'live', 'live', 15_000);
      // The server ends every stream after STREAM_MAX_DURATION_MS with isFinal: true.
      await until(() => lt.state === 'ended', 'ended', 15_000);
      const calls = rec.calls.length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(rec.calls.length).toBe(calls);
      expect(c.seen('error')).toBe(false);
    } finally {
      lt.stop();
      other.close();
    }
  });
});
