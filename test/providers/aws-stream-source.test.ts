// The `aws` log stream source (FilterLogEvents history and polled tail) through the real SDK, against
// the fake CloudWatch Logs endpoint, whose filter patterns are matched by Berth's own CloudWatch-syntax
// compiler: merge across groups, pagination, stream selection, resume, the tail cursor, shared reads,
// throttling and the per-account rate limiter.
import { AwsClients } from '../../src/providers/aws/clients.js';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileFilterPattern } from '../../src/core/filter-pattern/index.js';
import type { CloudAccount } from '../../src/core/log-query/types.js';
import { AwsStreamSource, type AwsCursor, type AwsStreamOptions } from '../../src/providers/aws/log-stream/index.js';
import { TokenBucket } from '../../src/providers/aws/token-bucket.js';
import { encodeEventId } from '../../src/services/log-stream/resume-id.js';
import { TailHub } from '../../src/services/log-stream/tail-hub.js';
import {
  predicateFilter,
  type HistoryCursor,
  type StreamEvent,
  type StreamQuery,
} from '../../src/providers/log-stream/port.js';
import {
  AwsError,
  defaultLogsOptions,
  FAKE_CREDENTIALS,
  startFakeAws,
  type FakeAws,
  type RecordedCall,
} from '../support/fake-aws/index.js';

const T = Date.UTC(2024, 0, 15, 12, 0, 0);
const never = new AbortController().signal;

let aws: FakeAws;
const clients: AwsClients[] = [];

const compiled = new Map<string, (m: string) => boolean>();
const cloudWatchMatcher = (pattern: string, message: string) => {
  let fn = compiled.get(pattern);
  if (fn === undefined) compiled.set(pattern, (fn = compileFilterPattern(pattern)));
  return fn(message);
};

beforeAll(async () => {
  aws = await startFakeAws();
});
afterAll(async () => {
  await aws?.close();
});
beforeEach(() => {
  Object.assign(aws.logs.options, defaultLogsOptions(), { filterPatternMatcher: cloudWatchMatcher });
  aws.clearFaults();
  aws.clearCalls();
  for (const g of aws.logs.groupNames()) aws.logs.deleteLogGroup(g);
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  vi.useRealTimers();
});

const account = (id = 'acc-1', region = 'us-east-1'): CloudAccount => ({
  id,
  organizationId: 'org-a',
  provider: 'aws',
  region,
  roleArn: null,
  externalId: null,
  endpoint: aws.endpoint,
});

/** A source with a fast retry strategy; unthrottled unless the test is about the limiter. */
function source(options: Partial<AwsStreamOptions> = {}): AwsStreamSource {
  const aws = new AwsClients({
    maxAttempts: 4,
    callTimeoutMs: 15_000,
    credentials: { ...FAKE_CREDENTIALS },
    retryStrategy: new ConfiguredRetryStrategy(4, 5),
  });
  clients.push(aws);
  return new AwsStreamSource({ aws, requestsPerSecond: 10_000, burst: 100, ...options });
}

function query(
  logGroups: string[],
  streams: StreamQuery['streams'] = { kind: 'prefix', prefix: 's' },
  pattern = '',
  acc = account(),
): StreamQuery {
  return {
    account: acc,
    region: acc.region,
    logGroups,
    streams,
    pattern,
    filter: predicateFilter(compileFilterPattern(pattern)),
  };
}

async function history(
  src: AwsStreamSource,
  q: StreamQuery,
  opts: { startMs?: number; endMs?: number; after?: HistoryCursor; switchPoint?: AwsCursor; batchSize?: number } = {},
): Promise<{ events: StreamEvent[]; batches: StreamEvent[][]; callsAtFirstBatch: number }> {
  const batches: StreamEvent[][] = [];
  let callsAtFirstBatch = -1;
  const gen = src.history(
    q,
    { startMs: opts.startMs ?? 0, endMs: opts.endMs ?? T + 3_600_000 },
    opts.after,
    opts.switchPoint,
    opts.batchSize ?? 500,
    never,
  );
  for await (const batch of gen) {
    if (callsAtFirstBatch < 0) callsAtFirstBatch = aws.callsTo('FilterLogEvents').length;
    batches.push(batch);
  }
  return { events: batches.flat(), batches, callsAtFirstBatch };
}

const msgs = (events: StreamEvent[]) => events.map((e) => e.message);
const filterCalls = () => aws.callsTo('FilterLogEvents');
const key = (e: StreamEvent) => [e.timestamp, e.eventId] as const;
function expectOrdered(events: StreamEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    const [ta, ia] = key(events[i - 1]!);
    const [tb, ib] = key(events[i]!);
    expect(ta < tb || (ta === tb && ia < ib), `event ${i} out of (timestamp, eventId) order`).toBe(true);
  }
}

describe('history', () => {
  it('merges several groups with overlapping timestamps oldest first, page by page, de-duplicated by eventId', async () => {
    aws.logs.options.filterPageSize = 2;
    // Overlapping timestamps, several events per millisecond, across three groups.
    for (const [g, offsets] of [
      ['/a', [0, 10, 10, 20, 35, 50]],
      ['/b', [5, 10, 20, 20, 40]],
      ['/c', [10, 11, 12, 60]],
    ] as const) {
      aws.logs.putLogEvents(
        g,
        's1',
        offsets.map((o, i) => ({ timestamp: T + o, message: `${g}#${i}` })),
      );
    }
    // The same event (one eventId) reached twice: it is sent once.
    const dupId = '9'.repeat(56);
    aws.logs.putLogEvents('/a', 's2', [{ timestamp: T + 30, message: 'dup', eventId: dupId }]);
    aws.logs.putLogEvents('/b', 's2', [{ timestamp: T + 30, message: 'dup', eventId: dupId }]);

    const { events, batches, callsAtFirstBatch } = await history(source(), query(['/a', '/b', '/c']), { batchSize: 3 });

    const expected = aws.logs.events().filter((e) => e.eventId !== dupId || e.logGroupName === '/a');
    expected.sort((x, y) => x.timestamp - y.timestamp || (x.eventId < y.eventId ? -1 : 1));
    expect(msgs(events)).toEqual(expected.map((e) => e.message));
    expect(events.filter((e) => e.eventId === dupId)).toHaveLength(1);
    expectOrdered(events);
    expect(batches.every((b) => b.length > 0 && b.length <= 3)).toBe(true);
    // Streamed: the first batch left after a few pages, long before the whole history was read.
    const total = filterCalls().length;
    expect(total).toBeGreaterThanOrEqual(9);
    expect(callsAtFirstBatch).toBeGreaterThanOrEqual(3);
    expect(callsAtFirstBatch).toBeLessThanOrEqual(total - 4);
    expect(events[0]).toMatchObject({ logStreamName: 's1', timestamp: T, ingestionTime: T, level: 'UNKNOWN' });
  });

  it('follows nextToken through empty pages (leading and trailing) and reads every page once', async () => {
    Object.assign(aws.logs.options, { filterPageSize: 3, filterEmptyPages: 2, filterTrailingEmptyPage: true });
    aws.logs.putLogEvents(
      '/a',
      's1',
      Array.from({ length: 7 }, (_, i) => ({ timestamp: T + i, message: `a${i}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's1',
      Array.from({ length: 2 }, (_, i) => ({ timestamp: T + i, message: `b${i}` })),
    );

    const { events } = await history(source(), query(['/a', '/b']));

    expect(msgs(events)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    const calls = filterCalls();
    // /a: 2 empty + 3 data pages + 1 trailing empty; /b: 2 empty + 1 data + 1 trailing empty.
    expect(calls.filter((c) => c.input.logGroupName === '/a')).toHaveLength(6);
    expect(calls.filter((c) => c.input.logGroupName === '/b')).toHaveLength(4);
    expect(calls.every((c) => c.status === 200)).toBe(true);
    for (const g of ['/a', '/b']) {
      const tokens = calls.filter((c) => c.input.logGroupName === g).map((c) => c.input.nextToken);
      expect(tokens[0]).toBeUndefined();
      expect(new Set(tokens).size, `${g}: each page asked once`).toBe(tokens.length);
    }
  });

  it('sends logStreamNamePrefix or logStreamNames, never both, and splits more than 100 names', async () => {
    aws.logs.putLogEvents('/a', 'web/1', [{ timestamp: T + 1, message: 'web1' }]);
    aws.logs.putLogEvents('/a', 'web/2', [{ timestamp: T + 2, message: 'web2' }]);
    aws.logs.putLogEvents('/a', 'worker/1', [{ timestamp: T + 3, message: 'worker1' }]);
    aws.logs.putLogEvents('/a', 'n-149', [{ timestamp: T + 4, message: 'n149' }]);
    aws.logs.putLogEvents('/b', 'web/1', [{ timestamp: T, message: 'b-web1' }]);
    const src = source();

    expect(msgs((await history(src, query(['/a', '/b'], { kind: 'prefix', prefix: 'web/' }))).events)).toEqual([
      'b-web1',
      'web1',
      'web2',
    ]);
    const prefixCalls = filterCalls();
    expect(prefixCalls).toHaveLength(2);
    for (const c of prefixCalls) {
      expect(c.input.logStreamNamePrefix).toBe('web/');
      expect(c.input).not.toHaveProperty('logStreamNames');
    }

    aws.clearCalls();
    const names = ['worker/1', 'web/2', ...Array.from({ length: 148 }, (_, i) => `n-${i + 2}`), 'web/2'];
    expect(msgs((await history(src, query(['/a'], { kind: 'names', names }))).events)).toEqual([
      'web2',
      'worker1',
      'n149',
    ]);
    const nameCalls = filterCalls();
    expect(nameCalls.map((c) => (c.input.logStreamNames as string[]).length)).toEqual([100, 50]);
    expect(new Set(nameCalls.flatMap((c) => c.input.logStreamNames as string[])).size).toBe(150);
    for (const c of [...prefixCalls, ...nameCalls])
      expect('logStreamNames' in c.input && 'logStreamNamePrefix' in c.input).toBe(false);
  });

  it('passes the filter pattern through unchanged (CloudWatch matches it), and none when empty', async () => {
    aws.logs.putLogEvents('/a', 's1', [
      { timestamp: T + 1, message: '{"level":"ERROR","latency":900}' },
      { timestamp: T + 2, message: '{"level":"ERROR","latency":20}' },
      { timestamp: T + 3, message: '{"level":"INFO","latency":900}' },
      { timestamp: T + 4, message: 'plain ERROR line' },
    ]);
    const pattern = '{ $.level = "ERROR" && $.latency > 500 }';
    const { events } = await history(source(), query(['/a'], undefined, pattern));
    expect(msgs(events)).toEqual(['{"level":"ERROR","latency":900}']);
    expect(events[0]!.level).toBe('ERROR');
    expect(filterCalls()[0]!.input.filterPattern).toBe(pattern);

    aws.clearCalls();
    expect((await history(source(), query(['/a'], undefined, ''))).events).toHaveLength(4);
    expect(filterCalls()[0]!.input).not.toHaveProperty('filterPattern');
  });

  it('resumes after (timestamp, eventId) inside a millisecond, and stops before the switch point', async () => {
    aws.logs.options.filterPageSize = 2;
    aws.logs.putLogEvents(
      '/a',
      's1',
      [10, 20, 20, 20, 30, 40, 50].map((o, i) => ({ timestamp: T + o, message: `a${i}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's1',
      [20, 45].map((o, i) => ({ timestamp: T + o, message: `b${i}` })),
    );
    const src = source();
    const all = (await history(src, query(['/a', '/b']))).events;
    expect(all).toHaveLength(9);

    for (const cut of [0, 2, 3, 5, 8]) {
      const after = { ts: all[cut]!.timestamp, id: all[cut]!.eventId };
      expect(msgs((await history(src, query(['/a', '/b']), { after })).events)).toEqual(msgs(all.slice(cut + 1)));
    }

    aws.clearCalls();
    const before = (await history(src, query(['/a', '/b']), { switchPoint: { ts: T + 40, seen: [] } })).events;
    expect(msgs(before)).toEqual(msgs(all.filter((e) => e.timestamp < T + 40)));
    expect(filterCalls().every((c) => c.input.endTime === T + 39)).toBe(true);
    // The window applies too.
    expect(msgs((await history(src, query(['/a', '/b']), { startMs: T + 20, endMs: T + 30 })).events)).toEqual(
      msgs(all.filter((e) => e.timestamp >= T + 20 && e.timestamp <= T + 30)),
    );
  });

  it('asks for interleaved events on every call: an endpoint that honours the flag would otherwise lose events', async () => {
    // An AWS-compatible endpoint that returns a group's events stream by stream unless `interleaved: true`.
    Object.assign(aws.logs.options, { filterHonoursInterleaved: true, filterPageSize: 3 });
    aws.logs.putLogEvents(
      '/a',
      's1',
      [10, 20, 30, 40, 50].map((o) => ({ timestamp: T + o, message: `s1 ${o}` })),
    );
    aws.logs.putLogEvents(
      '/a',
      's2',
      [5, 15, 25, 35, 45].map((o) => ({ timestamp: T + o, message: `s2 ${o}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's1',
      [12, 22].map((o) => ({ timestamp: T + o, message: `b ${o}` })),
    );
    const expected = aws.logs.events().map((e) => e.message);
    const src = source({ now: () => T + 100 });

    expect(msgs((await history(src, query(['/a', '/b']))).events)).toEqual(expected);
    const tail = await src.read(query(['/a', '/b']), [{ ts: T, seen: [] }], never);
    expect(msgs(src.advance({ ts: T, seen: [] }, tail, 0).events)).toEqual(expected);
    expect(filterCalls().length).toBeGreaterThan(4);
    expect(filterCalls().every((c) => c.input.interleaved === true)).toBe(true);

    // The same history with the flag taken off the wire: the merge drops what comes back out of order.
    aws.intercept('FilterLogEvents', (input, call) =>
      aws.logs.handle('FilterLogEvents', { ...input, interleaved: undefined }, call.region ?? 'us-east-1'),
    );
    try {
      const without = msgs((await history(src, query(['/a', '/b']))).events);
      expect(without.length).toBeLessThan(expected.length);
    } finally {
      aws.intercept('FilterLogEvents', undefined);
    }
  });

  it('reads a log group that does not exist as empty', async () => {
    aws.logs.putLogEvents('/a', 's1', [{ timestamp: T, message: 'here' }]);
    expect(msgs((await history(source(), query(['/missing', '/a']))).events)).toEqual(['here']);
  });

  it('retries throttling (SDK standard retry) and fails on other errors', async () => {
    aws.logs.putLogEvents('/a', 's1', [{ timestamp: T, message: 'x' }]);
    aws.failNext('FilterLogEvents', { code: 'ThrottlingException', times: 2 });
    expect(msgs((await history(source(), query(['/a']))).events)).toEqual(['x']);
    expect(filterCalls().map((c) => c.errorCode ?? 'ok')).toEqual(['ThrottlingException', 'ThrottlingException', 'ok']);

    aws.failNext('FilterLogEvents', { code: 'AccessDeniedException', times: 1 });
    await expect(history(source(), query(['/a']))).rejects.toMatchObject({ name: 'AccessDeniedException' });
  });
});

describe('tail', () => {
  /** A source on a clock the test moves. */
  function clocked(start: number, options: Partial<AwsStreamOptions> = {}) {
    const clock = { now: start };
    return { clock, src: source({ now: () => clock.now, ...options }) };
  }
  async function poll(src: AwsStreamSource, q: StreamQuery, cursor: AwsCursor, startMs = 0) {
    const batch = await src.read(q, [cursor], never);
    return src.advance(cursor, batch, startMs);
  }

  it('delivers what lies after tailStart exactly once: same-millisecond events and late arrivals within the lookback', async () => {
    const { clock, src } = clocked(T);
    const q = query(['/a', '/b']);
    aws.logs.putLogEvents('/a', 's1', [{ timestamp: T - 9_000, message: 'history' }]);
    let cursor = await src.tailStart();
    // The switch point trails "now" by the lookback: history ends before it, the tail starts there.
    expect(cursor).toEqual({ ts: T - 5_000, seen: [] });
    aws.logs.putLogEvents('/a', 's1', [{ timestamp: T - 1_000, message: 'just before the stream, ingested late' }]);

    clock.now = T + 1_000;
    aws.logs.putLogEvents('/a', 's1', [
      { timestamp: T + 500, message: 'same-ms 1' },
      { timestamp: T + 500, message: 'same-ms 2' },
    ]);
    aws.logs.putLogEvents('/b', 's1', [
      { timestamp: T + 500, message: 'same-ms 3' },
      { timestamp: T + 900, message: 'b 900' },
    ]);
    let r = await poll(src, q, cursor);
    expect(msgs(r.events)).toEqual([
      'just before the stream, ingested late',
      'same-ms 1',
      'same-ms 2',
      'same-ms 3',
      'b 900',
    ]);
    expectOrdered(r.events);
    cursor = r.cursor;

    clock.now = T + 2_000;
    r = await poll(src, q, cursor);
    expect(r.events).toEqual([]);
    cursor = r.cursor;

    // Another event of an already delivered millisecond, a late one (older than the newest delivered,
    // within the lookback), a new one; and one later than the lookback allows (given up).
    aws.logs.putLogEvents('/a', 's1', [{ timestamp: T + 500, message: 'same-ms 4' }]);
    aws.logs.putLogEvents('/b', 's2', [{ timestamp: T + 200, message: 'late 200' }]);
    aws.logs.putLogEvents('/b', 's1', [{ timestamp: T + 1_500, message: 'new 1500' }]);
    aws.logs.putLogEvents('/b', 's1', [{ timestamp: T - 4_000, message: 'too late' }]);
    clock.now = T + 3_000;
    r = await poll(src, q, cursor);
    expect(msgs(r.events)).toEqual(['late 200', 'same-ms 4', 'new 1500']);
    cursor = r.cursor;

    for (const now of [T + 4_000, T + 7_000, T + 20_000]) {
      clock.now = now;
      r = await poll(src, q, cursor);
      expect(r.events).toEqual([]);
      cursor = r.cursor;
    }
    // The cursor only remembers what the lookback still covers.
    expect(cursor.ts).toBe(T + 20_001 - 5_000);
    expect(cursor.seen).toEqual([]);
    // Each read swept one lookback back from the previous one, to now.
    const last = filterCalls().at(-1)!;
    expect(last.input).toMatchObject({ startTime: T + 7_001 - 5_000, endTime: T + 20_000 });
  });

  it('skips events before the stream startTime', async () => {
    const { clock, src } = clocked(T);
    const q = query(['/a']);
    const cursor = await src.tailStart();
    aws.logs.putLogEvents('/a', 's1', [
      { timestamp: T - 100, message: 'before startTime' },
      { timestamp: T + 100, message: 'after' },
    ]);
    clock.now = T + 1_000;
    expect(msgs((await poll(src, q, cursor, T)).events)).toEqual(['after']);
  });

  it('N cursors cost one FilterLogEvents sweep per group per read; each gets what lies past its own', async () => {
    const { clock, src } = clocked(T + 10_000);
    const q = query(['/a', '/b', '/c']);
    aws.logs.putLogEvents(
      '/a',
      's1',
      [1_000, 3_000, 6_000, 9_000].map((o) => ({ timestamp: T + o, message: `a${o}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's1',
      [2_000, 6_000].map((o) => ({ timestamp: T + o, message: `b${o}` })),
    );
    aws.logs.putLogEvents(
      '/c',
      's1',
      [8_000].map((o) => ({ timestamp: T + o, message: `c${o}` })),
    );
    const cursors: AwsCursor[] = Array.from({ length: 10 }, (_, i) => ({ ts: T + i * 1_000, seen: [] }));

    const batch = await src.read(q, cursors, never);
    expect(filterCalls()).toHaveLength(3);
    expect(filterCalls().map((c) => c.input.startTime)).toEqual([T, T, T]);
    cursors.forEach((c, i) => {
      const { events } = src.advance(c, batch, 0);
      const want = aws.logs
        .events()
        .filter((e) => e.timestamp >= c.ts)
        .map((e) => e.message);
      expect(msgs(events), `cursor ${i}`).toEqual(want);
    });
    clock.now += 1;

    // Through the hub: 25 subscribers, one read (three calls) per interval.
    aws.clearCalls();
    const hub = new TailHub(30);
    const delivered = new Map<number, string[]>();
    const unsubscribe = Array.from({ length: 25 }, (_, i) =>
      hub.subscribe(src, q, {
        cursor: { ts: T + 5_000, seen: [] },
        startMs: 0,
        ready: () => true,
        deliver: (events) => delivered.set(i, [...(delivered.get(i) ?? []), ...msgs(events)]),
        fail: (error) => {
          throw error;
        },
      }),
    );
    await vi.waitFor(() => expect(hub.polls).toBeGreaterThanOrEqual(3), { timeout: 5_000, interval: 10 });
    unsubscribe.forEach((u) => u());
    const polls = hub.polls;
    // The read in flight when the last subscriber left may have been cut short.
    expect(filterCalls().length).toBeLessThanOrEqual(3 * polls);
    expect(filterCalls().length).toBeGreaterThanOrEqual(3 * (polls - 1));
    for (let i = 0; i < 25; i++) expect(delivered.get(i)).toEqual(['a6000', 'b6000', 'c8000', 'a9000']);
    await new Promise((r) => setTimeout(r, 100));
    expect(hub.polls).toBe(polls);
    expect(hub.activePollers).toBe(0);
  });

  it('bounds a read to maxPagesPerRead pages per group and catches up on the next reads', async () => {
    const { clock, src } = clocked(T + 1_000, { maxPagesPerRead: 2 });
    aws.logs.options.filterPageSize = 2;
    const q = query(['/a']);
    aws.logs.putLogEvents(
      '/a',
      's1',
      Array.from({ length: 9 }, (_, i) => ({ timestamp: T + 100 + i, message: `e${i}` })),
    );
    let cursor: AwsCursor = { ts: T, seen: [] };
    const got: string[] = [];
    for (let i = 0; i < 4; i++) {
      const batch = await src.read(q, [cursor], never);
      const r = src.advance(cursor, batch, 0);
      got.push(...msgs(r.events));
      cursor = r.cursor;
      clock.now += 10;
    }
    expect(got).toEqual(Array.from({ length: 9 }, (_, i) => `e${i}`));
    // 2 pages per read at most.
    expect(filterCalls().length).toBeLessThanOrEqual(8);
  });

  it('advance stops at `limit` events with a cursor right after them; each compacted cursor resumes with exactly the rest', async () => {
    const { clock, src } = clocked(T);
    const q = query(['/a', '/b']);
    let cursor = await src.tailStart();
    // Delivered by an earlier read: events at later milliseconds than the late burst below.
    aws.logs.putLogEvents('/a', 's1', [
      { timestamp: T + 900, message: 'early 900' },
      { timestamp: T + 950, message: 'early 950' },
    ]);
    clock.now = T + 1_000;
    const r = await poll(src, q, cursor);
    expect(msgs(r.events)).toEqual(['early 900', 'early 950']);
    cursor = r.cursor;
    // One read then finds 260 events: a late burst with 100 in one millisecond (in two groups), then newer ones.
    aws.logs.putLogEvents(
      '/a',
      's1',
      Array.from({ length: 60 }, (_, i) => ({ timestamp: T + 500, message: `late a${i}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's1',
      Array.from({ length: 40 }, (_, i) => ({ timestamp: T + 500, message: `late b${i}` })),
    );
    aws.logs.putLogEvents(
      '/b',
      's2',
      Array.from({ length: 100 }, (_, i) => ({ timestamp: T + 600 + (i % 7), message: `late c${i}` })),
    );
    aws.logs.putLogEvents(
      '/a',
      's2',
      Array.from({ length: 60 }, (_, i) => ({ timestamp: T + 1_500 + Math.floor(i / 3), message: `new ${i}` })),
    );
    clock.now = T + 2_000;
    const batch = await src.read(q, [cursor], never);
    const whole = src.advance(cursor, batch, 0);
    expect(whole.events).toHaveLength(260);
    const all = msgs(whole.events);

    for (const limit of [1, 7, 45, 100]) {
      let c = cursor;
      const got: string[] = [];
      const steps: { compact: unknown; count: number }[] = [];
      for (let i = 0; ; i++) {
        expect(i, 'progress').toBeLessThan(400);
        const step = src.advance(c, batch, 0, limit);
        expect(step.events.length).toBeLessThanOrEqual(limit);
        got.push(...msgs(step.events));
        c = step.cursor;
        const compact = JSON.parse(JSON.stringify(src.compact(c))) as unknown;
        expect(encodeEventId({ p: 't', c: compact }).length).toBeLessThanOrEqual(4096);
        steps.push({ compact, count: got.length });
        if (step.more !== true) break;
        expect(step.events).toHaveLength(limit);
      }
      expect(got, `limit ${limit}`).toEqual(all);
      // The in-memory cursor after the last part is the cursor after the whole read.
      expect(src.advance(c, batch, 0).events).toEqual([]);
      // Every part's id resumes with exactly the events after it, in a later read.
      for (const [i, step] of steps.entries()) {
        if (limit === 1 && i % 13 !== 0) continue;
        const restored = src.restore(step.compact)!;
        expect(restored, `part ${i} restores`).toBeDefined();
        const resumed = src.advance(restored, await src.read(q, [restored], never), 0);
        expect(msgs(resumed.events), `limit ${limit}, resumed after part ${i}`).toEqual(all.slice(step.count));
      }
    }
  });

  it('compact fits an SSE id and restore resumes without repeats; foreign or malformed values are refused', async () => {
    const { clock, src } = clocked(T);
    const q = query(['/a']);
    const start = await src.tailStart();
    aws.logs.putLogEvents(
      '/a',
      's1',
      Array.from({ length: 80 }, (_, i) => ({ timestamp: T + 10 + (i % 40), message: `m${i}` })),
    );
    clock.now = T + 1_000;
    const first = await poll(src, q, start);
    expect(first.events).toHaveLength(80);

    const compact = src.compact(first.cursor);
    expect(encodeEventId({ p: 't', c: compact }).length).toBeLessThanOrEqual(4096);
    const restored = src.restore(JSON.parse(JSON.stringify(compact)));
    expect(restored).toBeDefined();
    aws.logs.putLogEvents('/a', 's1', [
      { timestamp: T + 49, message: 'same ms as the newest' },
      { timestamp: T + 600, message: 'later' },
    ]);
    clock.now = T + 2_000;
    // Too many ids for an SSE id: the resume point is the newest millisecond, its ids dropped as repeats.
    expect(msgs((await poll(src, q, restored!)).events)).toEqual(['same ms as the newest', 'later']);
    // The in-memory cursor keeps every id, so it also finds nothing twice.
    expect(msgs((await poll(src, q, first.cursor)).events)).toEqual(['same ms as the newest', 'later']);

    // A small cursor round-trips whole.
    const small: AwsCursor = {
      ts: T,
      seen: [
        [T + 1, 'x'],
        [T + 2, 'y'],
      ],
    };
    expect(src.compact(small)).toEqual({ t: T, i: ['x', 'y'] });
    expect(src.restore(src.compact(small))).toEqual({
      ts: T,
      seen: [
        [T, 'x'],
        [T, 'y'],
      ],
    });
    for (const bad of [
      undefined,
      null,
      'x',
      { l: 5 },
      { t: -1, i: [] },
      { t: 1.5, i: [] },
      { t: 1, i: 'x' },
      { t: 1, i: [1] },
    ]) {
      expect(src.restore(bad)).toBeUndefined();
    }
  });
});

describe('rate limiter', () => {
  const windowMax = (times: number[], width: number) =>
    Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + width).length));

  it('token bucket (fake clock): 5 per second, FIFO, no rolling second above 5, abortable', async () => {
    vi.useFakeTimers({ now: T });
    const bucket = new TokenBucket(5, 1);
    const granted: number[] = [];
    const order: number[] = [];
    const aborted = new AbortController();
    const waits = Array.from({ length: 16 }, (_, i) =>
      bucket.take(i === 3 ? aborted.signal : undefined).then(
        () => {
          granted.push(Date.now());
          order.push(i);
        },
        () => order.push(-i),
      ),
    );
    aborted.abort(new Error('gone'));
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(waits);
    expect(order.filter((i) => i >= 0)).toEqual([0, 1, 2, ...Array.from({ length: 12 }, (_, i) => i + 4)]);
    expect(order).toContain(-3);
    expect(granted).toHaveLength(15);
    expect(windowMax(granted, 1_000)).toBe(5);
    expect(granted.at(-1)! - granted[0]!).toBe(14 * 200);
    // A larger bucket lets a burst through at once, then the rate holds.
    const burst = new TokenBucket(5, 5);
    const t0 = Date.now();
    const times: number[] = [];
    const all = Array.from({ length: 10 }, () => burst.take().then(() => times.push(Date.now() - t0)));
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(all);
    expect(times).toEqual([0, 0, 0, 0, 0, 200, 400, 600, 800, 1000]);
  });

  it('keeps FilterLogEvents of one account and region at ≤ 5 calls/s, shared by history and tail (measured)', async () => {
    const src = source({ requestsPerSecond: 5, burst: 1, now: () => T + 60_000 });
    aws.logs.options.filterPageSize = 2;
    for (const g of ['/a', '/b', '/c'])
      aws.logs.putLogEvents(
        g,
        's1',
        [1, 2, 3].map((o) => ({ timestamp: T + o, message: `${g}${o}` })),
      );
    aws.logs.putLogEvents('/t', 's1', [{ timestamp: T + 59_000, message: 'tail' }]);
    let throttled = false;
    aws.intercept('FilterLogEvents', (_input, call) => {
      if (call.region !== 'us-east-1' || throttled) return undefined;
      throttled = true;
      throw new AwsError('ThrottlingException', 'Rate exceeded');
    });
    const other = account('acc-2', 'eu-west-1');
    const started = Date.now();

    const [h] = await Promise.all([
      history(src, query(['/a', '/b', '/c'])),
      (async () => {
        for (let i = 0; i < 3; i++) await src.read(query(['/t']), [{ ts: T + 50_000, seen: [] }], never);
      })(),
      // Another account has its own limiter: not slowed by this one's queue.
      (async () => {
        const t0 = Date.now();
        await src.read(query(['/t'], undefined, '', other), [{ ts: T + 50_000, seen: [] }], never);
        expect(Date.now() - t0).toBeLessThan(400);
      })(),
    ]);
    aws.intercept('FilterLogEvents', undefined);
    expect(h.events).toHaveLength(9);

    const calls = filterCalls().filter((c: RecordedCall) => c.region === 'us-east-1');
    // 3 groups x 2 pages + 3 tail reads + 1 throttled attempt (a retry takes a token too).
    expect(calls).toHaveLength(10);
    const times = calls.map((c) => c.at);
    // Evenly spaced 200 ms apart: at most 5 in any second (a little slack for arrival jitter).
    expect(windowMax(times, 950)).toBeLessThanOrEqual(5);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(9 * 200 - 60);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_700);
  });
});
