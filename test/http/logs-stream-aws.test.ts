// GET /cloud/logs/stream on an `aws` account, black-box over HTTP: the real SDK against the fake
// CloudWatch Logs endpoint (FilterLogEvents), read with a plain fetch streaming reader.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileFilterPattern } from '../../src/core/filter-pattern/index.js';
import { numberCopies } from '../../src/core/tail-window.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

let t: TestApp;
let aws: FakeAws;

beforeAll(async () => {
  aws = await startFakeAws({
    logs: { filterPatternMatcher: (pattern, message) => compileFilterPattern(pattern)(message) },
  });
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'acc-aws', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: aws.endpoint },
      ],
    }),
    // The polling tail (where StartLiveTail is refused or AWS_LIVE_TAIL=off); the Live Tail path is
    // logs-stream-live-tail.test.ts.
    config: { STREAM_POLL_INTERVAL_MS: 100, AWS_LIVE_TAIL: 'off' },
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
beforeEach(() => {
  aws.clearCalls();
  for (const g of aws.logs.groupNames()) aws.logs.deleteLogGroup(g);
});

/** Opens the stream as the owner and parses SSE frames as they arrive. */
const openStream = (params: Record<string, string>, lastEventId?: string) =>
  openSse(t.url, TOKENS.owner, params, lastEventId === undefined ? {} : { 'last-event-id': lastEventId });

describe('GET /cloud/logs/stream on an aws account', () => {
  it('history only: merged across groups oldest first, in id-carrying messages, then isFinal and close', async () => {
    const base = Date.now() - 3_600_000;
    aws.logs.options.filterPageSize = 2;
    aws.logs.putLogEvents('/app/web', 'web/1', [
      { timestamp: base + 10, message: 'INFO web one' },
      { timestamp: base + 30, message: 'ERROR web two' },
      { timestamp: base + 30, message: 'INFO web three' },
    ]);
    aws.logs.putLogEvents('/app/api', 'web/9', [
      { timestamp: base + 20, message: 'INFO api one' },
      { timestamp: base + 40, message: 'WARN api two' },
    ]);
    aws.logs.putLogEvents('/app/api', 'worker/1', [{ timestamp: base + 25, message: 'INFO not this stream' }]);
    aws.logs.putLogEvents('/app/web', 'web/1', [{ timestamp: base - 1, message: 'INFO before startTime' }]);

    try {
      const s = await openStream({
        accountId: 'acc-aws',
        logGroups: '/app/web,/app/api',
        logStreamPrefix: 'web/',
        startTime: new Date(base).toISOString(),
      });
      expect(s.res.status).toBe(200);
      expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(s.res.headers.get('x-accel-buffering')).toBe('no');
      expect(s.res.headers.get('x-content-type-options')).toBe('nosniff');

      const got = await s.events(100);
      expect(got.map((e) => e.message)).toEqual([
        'INFO web one',
        'INFO api one',
        'ERROR web two',
        'INFO web three',
        'WARN api two',
      ]);
      expect(got[0]).toEqual({
        logStreamName: 'web/1',
        message: 'INFO web one',
        timestamp: new Date(base + 10).toISOString(),
        ingestionTime: new Date(base + 10).toISOString(),
        level: 'INFO',
      });
      const last = s.frames.at(-1)!;
      expect(last.data).toEqual({ events: [], isFinal: true });
      expect(await s.next()).toBeUndefined(); // closed by the server
      const messages = s.frames.filter((f) => f.data !== undefined);
      expect(messages.every((f) => typeof f.id === 'string' && f.id.length > 0 && f.event === undefined)).toBe(true);
      expect(messages.slice(0, -1).every((f) => f.data.isFinal === false)).toBe(true);

      const calls = aws.callsTo('FilterLogEvents');
      expect(calls.every((c) => c.input.logStreamNamePrefix === 'web/' && !('logStreamNames' in c.input))).toBe(true);
      expect(calls.every((c) => c.input.startTime === base)).toBe(true);
    } finally {
      aws.logs.options.filterPageSize = 10_000;
    }
  });

  it('an empty logStreamPrefix reads every stream of the groups and sends AWS no prefix (it requires 1-512 characters)', async () => {
    const base = Date.now() - 30 * 60_000;
    aws.logs.putLogEvents('/app/whole', 'web/1', [{ timestamp: base + 1, message: 'from web' }]);
    aws.logs.putLogEvents('/app/whole', 'worker/3', [{ timestamp: base + 2, message: 'from worker' }]);
    const before = aws.callsTo('FilterLogEvents').length;
    const s = await openStream({
      accountId: 'acc-aws',
      logGroups: '/app/whole',
      logStreamPrefix: '',
      startTime: new Date(base).toISOString(),
    });
    expect(s.res.status).toBe(200);
    expect((await s.events(100)).map((e) => e.message)).toEqual(['from web', 'from worker']);
    const calls = aws.callsTo('FilterLogEvents').slice(before);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => !('logStreamNamePrefix' in c.input) && !('logStreamNames' in c.input))).toBe(true);
  });

  it('history then tail: events written after the start arrive once, in order; a disconnect stops the polls', async () => {
    const now = Date.now();
    aws.logs.putLogEvents('/app/web', 'web/1', [
      { timestamp: now - 60_000, message: 'old 1' },
      { timestamp: now - 30_000, message: 'old 2' },
    ]);
    aws.logs.putLogEvents('/app/api', 'web/1', [{ timestamp: now - 45_000, message: 'old api' }]);

    const s = await openStream({
      accountId: 'acc-aws',
      logGroups: '/app/web,/app/api',
      logStreamPrefix: 'web/',
      tail: 'true',
      filterPattern: '-DEBUG',
    });
    try {
      // Written during the switch: just before "now" of the stream, but after history has been read.
      aws.logs.putLogEvents('/app/api', 'web/2', [{ timestamp: now - 1_000, message: 'during the switch' }]);
      const history = await s.events(3);
      expect(history.map((e) => e.message)).toEqual(['old 1', 'old api', 'old 2']);

      const ts = Date.now();
      aws.logs.putLogEvents('/app/web', 'web/1', [
        { timestamp: ts, message: 'new a' },
        { timestamp: ts, message: 'new b (same ms)' },
        { timestamp: ts, message: 'DEBUG filtered out' },
      ]);
      aws.logs.putLogEvents('/app/api', 'web/3', [{ timestamp: ts + 1, message: 'new api' }]);
      aws.logs.putLogEvents('/app/api', 'worker/1', [{ timestamp: ts + 1, message: 'other stream' }]);
      const tail = (await s.events(4)).map((e) => e.message);
      // Tail events of one millisecond come in the order of their content ids (see docs/decisions.md, issue 12).
      expect([tail[0], new Set(tail.slice(1, 3)), tail[3]]).toEqual([
        'during the switch',
        new Set(['new a', 'new b (same ms)']),
        'new api',
      ]);

      // Several more polls: nothing is repeated.
      const polls = aws.callsTo('FilterLogEvents').length;
      await vi.waitFor(() => expect(aws.callsTo('FilterLogEvents').length).toBeGreaterThanOrEqual(polls + 3), {
        timeout: 5_000,
        interval: 20,
      });
      // Anything repeated in those polls would come before the sentinel.
      aws.logs.putLogEvents('/app/web', 'web/1', [{ timestamp: Date.now(), message: 'sentinel' }]);
      expect((await s.events(1)).map((e) => e.message)).toEqual(['sentinel']);
      expect(aws.callsTo('FilterLogEvents').every((c) => c.input.filterPattern === '-DEBUG')).toBe(true);
      expect(aws.callsTo('FilterLogEvents').every((c) => c.input.interleaved === true)).toBe(true);
    } finally {
      s.close();
    }
    // The client left: the poller stops, and no FilterLogEvents follows.
    await vi.waitFor(() => expect(t.services.streams.hub.activePollers).toBe(0), { timeout: 3_000, interval: 20 });
    await vi.waitFor(() => expect(t.services.streams.activeStreams).toBe(0), { timeout: 3_000, interval: 20 });
    const calls = aws.callsTo('FilterLogEvents').length;
    await new Promise((r) => setTimeout(r, 400));
    expect(aws.callsTo('FilterLogEvents').length).toBe(calls);
  });

  it('one tail poll that reads 1,200 events (STREAM_BATCH_SIZE 500): every message resumes right after its own events', async () => {
    const params = { accountId: 'acc-aws', logGroups: '/app/burst', logStreamPrefix: 'web/', tail: 'true' };
    aws.logs.createLogStream('/app/burst', 'web/1');
    const s = await openStream(params);
    try {
      const hub = t.services.streams.hub;
      await vi.waitFor(() => expect(hub.activePollers).toBe(1), { timeout: 3_000, interval: 10 });
      const polls = aws.callsTo('FilterLogEvents').length;
      await vi.waitFor(() => expect(aws.callsTo('FilterLogEvents').length).toBeGreaterThan(polls), {
        timeout: 3_000,
        interval: 10,
      });
      // One write between two polls: 1,200 events, 300 to a millisecond, in two streams.
      const ts = Date.now() - 1_000;
      const written = aws.logs.putLogEvents(
        '/app/burst',
        'web/1',
        Array.from({ length: 600 }, (_, i) => ({ timestamp: ts + Math.floor(i / 150), message: `a ${i}` })),
      );
      written.push(
        ...aws.logs.putLogEvents(
          '/app/burst',
          'web/2',
          Array.from({ length: 600 }, (_, i) => ({ timestamp: ts + Math.floor(i / 150), message: `b ${i}` })),
        ),
      );
      // Oldest first; in one millisecond, by content id (`hash.k`, core/tail-window.ts).
      const ids = numberCopies(written.map((e) => ({ ...e, logGroup: '/app/burst' })));
      ids.sort((x, y) => x.timestamp - y.timestamp || (x.eventId < y.eventId ? -1 : 1));
      const all = ids.map((e) => e.message);
      expect((await s.events(1_200)).map((e) => e.message)).toEqual(all);
      const messages = s.frames.filter((f) => f.data !== undefined);
      expect(messages.map((f) => f.data.events.length)).toEqual([500, 500, 200]);
      expect(new Set(messages.map((f) => f.id)).size).toBe(3);
      s.close();

      for (const [i, from] of [
        [0, 500],
        [1, 1_000],
        [2, 1_200],
      ] as const) {
        const again = await openStream(params, messages[i]!.id);
        try {
          const rest = all.slice(from);
          expect((await again.events(rest.length)).map((e) => e.message)).toEqual(rest);
          // Nothing is repeated afterwards: the next event is the next one written.
          const sentinel = `sentinel ${i}`;
          aws.logs.putLogEvents('/app/burst', 'web/1', [{ timestamp: Date.now(), message: sentinel }]);
          all.push(sentinel);
          expect((await again.events(1)).map((e) => e.message)).toEqual([sentinel]);
        } finally {
          again.close();
        }
      }
    } finally {
      s.close();
    }
  });
});
