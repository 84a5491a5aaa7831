// Resuming an aws live tail with Last-Event-ID delivers events ingested late (timestamp a few seconds back,
// within TAIL_LOOKBACK_MS) while the client was away, however many events it had received within the lookback.
// (Before the SSE id carried the bus position, it could list only ~130 delivered ids; past that the resume point
// moved to the newest delivered millisecond and such late events were lost.) Single process, PGlite.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const LOOKBACK_MS = 5_000;
const LATE_BY_MS = 3_000;

let t: TestApp;
let aws: FakeAws;

beforeAll(async () => {
  aws = await startFakeAws({ liveTail: { updateIntervalMs: 100 } });
  aws.logs.createLogStream('/app/web', 'web/1');
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'acc-aws', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: aws.endpoint },
      ],
    }),
    config: { STREAM_POLL_INTERVAL_MS: 100, TAIL_LOOKBACK_MS: LOOKBACK_MS, TAIL_WARMUP_MS: 2_000 },
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

let n = 0;
function put(count: number, tag: string, lateByMs = 0): string[] {
  const now = Date.now();
  const messages = Array.from({ length: count }, (_, i) => `INFO ${tag} ${++n} #${i}`);
  aws.logs.putLogEvents(
    '/app/web',
    'web/1',
    messages.map((message) => ({ message, timestamp: now - lateByMs, ingestionTime: now })),
  );
  return messages;
}

async function receive(s: SseReader, expected: string[], timeoutMs: number): Promise<string[]> {
  const got: string[] = [];
  const deadline = Date.now() + timeoutMs;
  while (expected.some((m) => !got.includes(m)) && Date.now() < deadline) {
    const frame = await s.next(Math.max(1, deadline - Date.now())).catch(() => null);
    if (frame === undefined) break;
    if (frame?.data?.events) got.push(...frame.data.events.map((e: { message: string }) => e.message));
  }
  return got;
}

describe('resuming an aws live tail with Last-Event-ID', () => {
  it.each([
    { before: 20, what: 'few events before the disconnect (their ids fit in the SSE id)' },
    { before: 300, what: 'many events before the disconnect (more ids than the SSE id holds)' },
  ])('delivers events ingested late while the client was away: $what', async ({ before }) => {
    const startTime = Date.now();
    const params = {
      accountId: 'acc-aws',
      logGroups: '/app/web',
      logStreamPrefix: 'web/',
      tail: true,
      startTime,
    };
    const s = await openSse(t.url, TOKENS.owner, params);
    let lastId: string | undefined;
    try {
      // The burst lies 1 s after the client's start; the late events (below) at 0.5 s: before the burst.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const first = put(before, `before-${before}`);
      expect((await receive(s, first, 15_000)).length).toBe(before);
      lastId = s.messages().at(-1)!.id;
    } finally {
      s.close();
    }
    // Late ingestion within the lookback, after the client's start, while it is away.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startTime + LATE_BY_MS + 500 - Date.now())));
    const late = put(5, `late-${before}`, LATE_BY_MS);
    const r = await openSse(t.url, TOKENS.owner, params, { 'last-event-id': lastId! });
    try {
      expect((await receive(r, late, 5_000)).filter((m) => late.includes(m)).sort()).toEqual([...late].sort());
    } finally {
      r.close();
    }
  });
});
