// CPU work a request brings, on a budget and off the event loop (issue 20): a log query's regex and a stream's
// filter pattern run in the filter pool; a source past its budget is missed (a stream ends with
// logs:filter:too-costly), a pattern whose worst case exceeds it is refused before the stream starts, and the
// event loop keeps serving meanwhile. Black-box over HTTP on the local provider, on PGlite and PostgreSQL.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { logSource } from '../support/log-source.js';
import { openSse } from '../support/log-stream-wire.js';
import { expectLogsInsightsOk, LOGS_INSIGHTS_PATH, type LogsInsightsResult } from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const WINDOW = { startTime: T0 - 60_000, endTime: T0 + 60_000 };
/** The regex of the attack: never matches `abText` (996 characters between two `c`s), every thread stays alive. */
const COSTLY = '(?:a[ab]{998}c)|(?:b[ab]{998}c)';

function abText(length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += i % 997 === 996 ? 'c' : (i * 7919) % 13 < 6 ? 'a' : 'b';
  return s;
}

function world(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [{ id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' }],
    projects: [{ id: 'proj-a', organizationId: ORG_A, name: 'A' }],
    environments: [{ id: 'env-a', projectId: 'proj-a', name: 'prod' }],
    moduleInstances: [
      { id: 'mi-big', environmentId: 'env-a', name: 'big', logSources: [logSource('app', 'acc-a', '/big')] },
      { id: 'mi-ok', environmentId: 'env-a', name: 'ok', logSources: [logSource('app', 'acc-a', '/ok')] },
      { id: 'mi-bulk', environmentId: 'env-a', name: 'bulk', logSources: [logSource('app', 'acc-a', '/bulk')] },
    ],
  });
}

async function ingest(t: TestApp, logGroup: string, logStream: string, messages: string[]): Promise<void> {
  const res = await t.request('POST', '/cloud/logs/local/events', {
    token: TOKENS.admin,
    body: {
      accountId: 'acc-a',
      region: 'us-east-1',
      logGroup,
      logStream,
      events: messages.map((message, i) => ({ message, timestamp: T0 + i })),
    },
  });
  expect(res.status).toBe(202);
}

/**
 * The event loop's worst delay allowed here: `npm test` runs files in parallel on two cores (this process also runs
 * the test itself, and a neighbour's password hashes or browser share the cores), so the strict bound (100 ms,
 * black-box and alone) is the reliability suite's; a stall of the kind this guards against lasts seconds. 288 ms
 * was seen once under such load.
 */
const MAX_DELAY_MS = 500;
/** The slowest /healthz answer allowed meanwhile: a round trip through a loaded machine's scheduler, well below a stall. */
const MAX_HEALTHZ_MS = 500;

/** Runs `work` while /healthz is polled and the event loop's delay is sampled; the slowest poll and the worst delay. */
async function whileServing<T>(t: TestApp, work: () => Promise<T>) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let slowest = 0;
  let polls = 0;
  let done = false;
  const poller = (async () => {
    while (!done) {
      const started = performance.now();
      const res = await fetch(`${t.url}/healthz`);
      await res.arrayBuffer();
      slowest = Math.max(slowest, performance.now() - started);
      polls += 1;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    const result = await work();
    return { result, slowest, polls, maxDelayMs: delay.max / 1e6 };
  } finally {
    done = true;
    delay.disable();
    await poller;
  }
}

describe('CPU work on a budget', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { LOG_FILTER_CPU_MS: 300 } });
    await ingest(t, '/big', 'big/1', [abText(250_000)]);
    await ingest(t, '/ok', 'ok/1', ['aac', 'plain line', 'bbbc']);
    // In /bulk, 400 messages of 3,000 characters (two requests: the body limit) in one stream: each message fits the
    // budget's worst case, all of them together do not.
    const bulk = Array.from({ length: 200 }, () => abText(3_000));
    for (let part = 0; part < 2; part++) await ingest(t, '/bulk', 'many/1', bulk);
    // The pool's thread starts with its first batch; from the TypeScript source that takes seconds of CPU (tsx), which
    // a built server does not pay: start it before the clock runs.
    await t.services.filters.start({ kind: 'pattern', pattern: 'x' }).keep([{ message: 'x' }]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a query whose regex would exceed the budget on a 250 KB message misses that source at once; the others answer', async () => {
    const { result, slowest, maxDelayMs } = await whileServing(t, () =>
      t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
        token: TOKENS.viewer,
        body: {
          ...WINDOW,
          logSourceKeys: ['mi-big::app', 'mi-ok::app'],
          filter: {
            kind: 'or',
            nodes: [
              { kind: 'text', op: 'regex', value: COSTLY },
              { kind: 'text', op: 'equals', value: 'aac' },
            ],
          },
        },
      }),
    );
    const body = expectLogsInsightsOk(result);
    expect(body.partial).toBe(true);
    expect(body.missedSources).toEqual(['/big']);
    expect(
      body.rows.map((r) => r.message),
      JSON.stringify(body).slice(0, 500),
    ).toEqual(['aac']);
    expect(slowest).toBeLessThan(MAX_HEALTHZ_MS);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
  });

  it('a query that spends its budget over many messages is stopped there and misses the source, the event loop free', async () => {
    const started = performance.now();
    const { result, slowest, maxDelayMs, polls } = await whileServing(t, () =>
      t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
        token: TOKENS.viewer,
        body: {
          ...WINDOW,
          logSourceKeys: ['mi-bulk::app'],
          filter: {
            kind: 'and',
            nodes: [
              { kind: 'stream', op: 'equals', value: 'many/1' },
              { kind: 'text', op: 'regex', value: COSTLY },
            ],
          },
        },
      }),
    );
    const body = expectLogsInsightsOk(result);
    expect(body).toMatchObject({ partial: true, missedSources: ['/bulk'], rows: [] });
    // The budget is 300 ms of a worker's time: the answer comes soon after, and /healthz was served meanwhile.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(polls).toBeGreaterThan(3);
    expect(slowest).toBeLessThan(MAX_HEALTHZ_MS);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
    expect(t.services.filters.stats.stopped + t.services.filters.stats.refused).toBeGreaterThanOrEqual(1);
  });

  it('a cheap regex is exact', async () => {
    const res = await t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
      token: TOKENS.viewer,
      body: { ...WINDOW, logSourceKeys: ['mi-ok::app'], filter: { kind: 'text', op: 'regex', value: '^[ab]+c$' } },
    });
    const body = expectLogsInsightsOk(res);
    expect(body).toMatchObject({ partial: false, missedSources: [] });
    expect(body.rows.map((r) => r.message).sort()).toEqual(['aac', 'bbbc']);
  });

  it('a filter pattern whose worst case exceeds the budget on one message is refused before the stream starts', async () => {
    const pattern = encodeURIComponent('%[ab]{600}c|a[ab]{300}c%');
    const res = await t.request<{ description: string }>(
      'GET',
      `/cloud/logs/stream?accountId=acc-a&logGroups=/big&logStreamPrefix=big&filterPattern=${pattern}`,
      { token: TOKENS.viewer },
    );
    expectError(res, 400, 'logs:filter:too-costly');
    expect(res.body.description).toContain('filterPattern');
  });
});

describe('a stream on a budget per read', () => {
  let t: TestApp;
  beforeAll(async () => {
    // 20 ms of CPU a read, reads of 2,000 events: 2,000 JSON messages of ~4 KB take longer than that to parse.
    t = await startTestApp({ fixture: world(), config: { LOG_FILTER_CPU_MS: 20, STREAM_BATCH_SIZE: 2_000 } });
    const json = JSON.stringify({
      level: 'info',
      items: Array.from({ length: 200 }, (_, i) => ({ id: i, v: 'x'.repeat(8) })),
    });
    for (let part = 0; part < 20; part++)
      await ingest(
        t,
        '/bulk',
        'wide/1',
        Array.from({ length: 100 }, () => json),
      );
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a stream whose pattern spends a read’s budget ends with logs:filter:too-costly, then its final event', async () => {
    const {
      result: frames,
      slowest,
      maxDelayMs,
    } = await whileServing(t, async () => {
      const sse = await openSse(t.url, TOKENS.viewer, {
        accountId: 'acc-a',
        logGroups: '/bulk',
        logStreamNames: 'wide/1',
        startTime: WINDOW.startTime,
        endTime: WINDOW.endTime,
        // No regex (nothing to refuse up front): each message is parsed as JSON.
        filterPattern: '{ $.level = "never" }',
      });
      expect(sse.res.status).toBe(200);
      for (;;) {
        const frame = await sse.next(10_000);
        if (frame === undefined || frame.data?.isFinal === true) break;
      }
      sse.close();
      return sse.frames;
    });
    const error = frames.find((f) => f.event === 'error');
    expect(error?.data.code).toBe('logs:filter:too-costly');
    expect(frames.some((f) => f.data?.isFinal === true)).toBe(true);
    expect(slowest).toBeLessThan(MAX_HEALTHZ_MS);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
  });
});
