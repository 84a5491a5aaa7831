// The live part of GET /cloud/logs/stream on an `aws` account is a StartLiveTail session (the real SDK against
// the fake's event-stream answer), and every seam is filled from FilterLogEvents: the switch from history, a
// dropped connection, a session timeout and its renewal, an update AWS sampled (over 500 events/s), a resume
// with Last-Event-ID. Every event reaches the client exactly once. Where StartLiveTail is refused, the tail
// polls FilterLogEvents instead and says so.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compileFilterPattern } from '../../src/core/filter-pattern/index.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

let t: TestApp;
let aws: FakeAws;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

beforeAll(async () => {
  aws = await startFakeAws({
    logs: { filterPatternMatcher: (pattern, message) => compileFilterPattern(pattern)(message) },
    liveTail: { updateIntervalMs: 100 },
  });
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'acc-aws', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: aws.endpoint },
      ],
    }),
    config: {
      STREAM_POLL_INTERVAL_MS: 100,
      TAIL_LOOKBACK_MS: 2_000,
      TAIL_WARMUP_MS: 2_000,
      STREAM_BATCH_SIZE: 500,
      AWS_CALL_TIMEOUT_MS: 2_000,
    },
    services: (store, config) =>
      createServices(store, config, {
        providers: {
          aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(3, 5) },
        },
      }),
  });
});
afterAll(async () => {
  await t?.close();
  await aws?.close();
});
beforeEach(async () => {
  // Every stream of the test before has ended and its session closed.
  await until(() => aws.liveTail.openSessions === 0, 'the sessions of the test before to close');
  aws.clearCalls();
  aws.liveTail.options.sessionTimeoutMs = 3 * 3_600_000;
  aws.liveTail.options.maxEventsPerSecond = 500;
  for (const g of aws.logs.groupNames()) aws.logs.deleteLogGroup(g);
  aws.logs.createLogGroup('/app/web');
  aws.logs.createLogStream('/app/web', 'web/1');
});

const openTail = (lastEventId?: string) =>
  openSse(
    t.url,
    TOKENS.owner,
    {
      accountId: 'acc-aws',
      logGroups: '/app/web',
      logStreamPrefix: 'web/',
      tail: true,
      startTime: Date.now() - 60_000,
    },
    lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
  );

let counter = 0;
/** Puts `n` events now, each with a unique message, and returns the messages. */
function put(n: number, tag: string): string[] {
  const now = Date.now();
  const messages = Array.from({ length: n }, (_, i) => `INFO ${tag} ${++counter} #${i}`);
  aws.logs.putLogEvents(
    '/app/web',
    'web/1',
    messages.map((message) => ({ timestamp: now, message })),
  );
  return messages;
}

/** Reads until every one of `expected` arrived (and a little longer, to see any repeat); returns all messages read. */
async function receive(s: SseReader, expected: string[], timeoutMs = 15_000): Promise<string[]> {
  const got: string[] = [];
  const want = new Set(expected);
  const deadline = Date.now() + timeoutMs;
  while ([...want].some((m) => !got.includes(m))) {
    if (Date.now() > deadline) {
      const missing = [...want].filter((m) => !got.includes(m));
      throw new Error(`missing ${missing.length} of ${want.size} events, e.g. ${missing.slice(0, 3).join(' | ')}`);
    }
    const frame = await s.next(Math.min(500, Math.max(1, deadline - Date.now()))).catch(() => null);
    if (frame === null) continue;
    if (frame === undefined) throw new Error('the stream ended');
    if (frame.event === 'error') throw new Error(`stream error: ${JSON.stringify(frame.data)}`);
    if (frame.data?.events) got.push(...frame.data.events.map((e: { message: string }) => e.message));
  }
  // Anything sent twice would follow right behind.
  const extra = Date.now() + 500;
  for (;;) {
    const frame = await s.next(Math.max(1, extra - Date.now())).catch(() => undefined);
    if (frame === undefined || Date.now() >= extra) break;
    if (frame.data?.events) got.push(...frame.data.events.map((e: { message: string }) => e.message));
  }
  return got;
}

const once = (got: string[], expected: string[]) => {
  const counts = new Map<string, number>();
  for (const m of got) counts.set(m, (counts.get(m) ?? 0) + 1);
  expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
  for (const m of expected) expect(counts.get(m), m).toBe(1);
};

describe('the aws live tail (StartLiveTail)', () => {
  it('delivers history, then live events from one session, each once, without polling FilterLogEvents', async () => {
    const started = aws.liveTail.started;
    const before = put(3, 'history');
    const s = await openTail();
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      const live = put(5, 'live');
      once(await receive(s, [...before, ...live]), [...before, ...live]);
      const session = aws.liveTail.sessions.at(-1)!;
      expect(session.input.logGroupIdentifiers).toEqual(['arn:aws:logs:us-east-1:123456789012:log-group:/app/web']);
      expect(session.input.logStreamNamePrefixes).toEqual(['web/']);
      // FilterLogEvents: the history and the seam fill at the start; no poll per interval.
      const fle = aws.callsTo('FilterLogEvents').length;
      await sleep(1_500);
      expect(aws.callsTo('FilterLogEvents').length).toBe(fle);
      expect(aws.liveTail.started).toBe(started + 1);
    } finally {
      s.close();
    }
  });

  it('fills what a dropped connection missed, and reconnects', async () => {
    const started = aws.liveTail.started;
    const s = await openTail();
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      const first = put(3, 'before-drop');
      await receive(s, first);
      aws.liveTail.dropAll();
      const during = put(4, 'during-drop');
      await until(() => aws.liveTail.started === started + 2 && aws.liveTail.openSessions === 1, 'a new session');
      const after = put(2, 'after-reconnect');
      once(await receive(s, [...during, ...after]), [...during, ...after]);
    } finally {
      s.close();
    }
  });

  it('renews a session at its timeout without loss or repeat', async () => {
    aws.liveTail.options.sessionTimeoutMs = 1_000;
    const s = await openTail();
    try {
      const sent: string[] = [];
      for (let i = 0; i < 12; i++) {
        sent.push(...put(2, `renewal-${i}`));
        await sleep(200);
      }
      once(await receive(s, sent), sent);
      expect(aws.liveTail.sessions.filter((x) => x.endedBy === 'timeout').length).toBeGreaterThanOrEqual(1);
    } finally {
      s.close();
    }
  });

  it('fills a sampled burst (over 500 events/s) from FilterLogEvents', async () => {
    const s = await openTail();
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      const burst = put(1_500, 'burst');
      once(await receive(s, burst, 20_000), burst);
      expect(aws.liveTail.sessions.at(-1)!.sampledUpdates).toBeGreaterThan(0);
    } finally {
      s.close();
    }
  });

  it('ends with logs:stream:gap when a seam cannot be filled; the client resumes from its last complete position', async () => {
    const s = await openTail();
    const got: string[] = [];
    let lastId: string | undefined;
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      got.push(...(await receive(s, put(3, 'before-gap'))));
      // A sampled burst whose fill needs more FilterLogEvents pages than one read takes (10 of 20 events).
      aws.logs.options.filterPageSize = 20;
      const burst = put(1_500, 'gap-burst');
      let frame = await s.next(15_000);
      while (frame !== undefined && frame.event !== 'error') {
        got.push(...(frame.data?.events ?? []).map((e: { message: string }) => e.message));
        frame = await s.next(15_000);
      }
      expect(frame?.data?.code).toBe('logs:stream:gap');
      const final = await s.next(5_000);
      expect(final?.data?.isFinal).toBe(true);
      lastId = final?.id;
      expect(got.filter((m) => burst.includes(m)).length).toBeLessThan(burst.length);
    } finally {
      s.close();
      aws.logs.options.filterPageSize = 10_000;
    }
    // The rest of the burst, and nothing the client already had.
    const r = await openTail(lastId);
    try {
      const burstLeft = aws.logs
        .events('/app/web')
        .map((e) => e.message)
        .filter((m) => m.includes('gap-burst') && !got.includes(m));
      const resumed = await receive(r, burstLeft, 20_000);
      once([...got, ...resumed], burstLeft);
      expect(resumed.filter((m) => got.includes(m))).toEqual([]);
    } finally {
      r.close();
    }
  });

  it('resumes with Last-Event-ID exactly where the client left', async () => {
    const s = await openTail();
    const first = put(4, 'resume-a');
    let lastId: string | undefined;
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      await receive(s, first);
      lastId = s.messages().at(-1)!.id;
    } finally {
      s.close();
    }
    const missed = put(3, 'resume-b');
    const r = await openTail(lastId);
    try {
      const got = await receive(r, missed);
      once(got, missed);
      for (const m of first) expect(got).not.toContain(m);
    } finally {
      r.close();
    }
  });

  it('polls when StartLiveTail never answers (an endpoint that does not really speak it)', async () => {
    aws.failNext('StartLiveTail', { hang: true, times: 1_000 });
    const s = await openTail();
    try {
      const polled = put(3, 'after-hang');
      once(await receive(s, polled, 20_000), polled);
      // Two sessions that never started (each bounded by AWS_CALL_TIMEOUT_MS): the key polls from then on.
      await until(() => t.services.streams.upstreams().poll === 1, 'the fallback to polling', 15_000);
      expect(t.services.streams.upstreams()).toEqual({ live: 0, poll: 1 });
      const later = put(2, 'polled-after-hang');
      once(await receive(s, later), later);
    } finally {
      s.close();
      aws.clearFaults();
    }
  });

  it('ends every subscriber with an error when the upstream fails for good; a new stream of the key starts afresh', async () => {
    const s = await openTail();
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a Live Tail session');
      // The reconnect's seam fill is refused: nothing can vouch for the gap.
      aws.failNext('FilterLogEvents', { code: 'AccessDeniedException', times: 1_000 });
      aws.liveTail.dropAll();
      let frame = await s.next(10_000);
      while (frame !== undefined && frame.event !== 'error') frame = await s.next(10_000);
      expect(frame?.data?.code).toBe('logs:upstream:failed');
      expect((await s.next(5_000))?.data?.isFinal).toBe(true);
    } finally {
      s.close();
      aws.clearFaults();
    }
    // The failure is in the bus's buffer still: it ended the streams that were open then, not this one.
    const again = await openTail();
    try {
      await until(() => aws.liveTail.openSessions === 1, 'a new Live Tail session');
      const later = put(2, 'afresh');
      once(await receive(again, later), later);
    } finally {
      again.close();
    }
  });

  it('falls back to polling FilterLogEvents where StartLiveTail is refused, and says so in /metrics', async () => {
    aws.failNext('StartLiveTail', { code: 'AccessDeniedException', times: 1_000 });
    const started = aws.liveTail.started;
    const s = await openTail();
    try {
      await sleep(500);
      const live = put(3, 'polled');
      once(await receive(s, live), live);
      expect(aws.liveTail.started).toBe(started);
      const metrics = await t.request('GET', '/metrics');
      expect(metrics.text).toMatch(/berth_log_tail_upstreams\{mode="poll"\} 1/);
    } finally {
      s.close();
      aws.clearFaults?.();
    }
  });
});
