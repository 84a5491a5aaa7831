// One organization may hold at most TAIL_MAX_UPSTREAMS_PER_ORG distinct aws tail upstreams in the cluster: a key
// beyond ends its subscribers with `logs:stream:too-many-streams`, while another subscriber of a key already open
// shares it for free, another organization is not affected, and a key closed gives its share back.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { openSse, type SseFrame, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

let t: TestApp;
let aws: FakeAws;

beforeAll(async () => {
  aws = await startFakeAws({ liveTail: { updateIntervalMs: 100 } });
  aws.logs.createLogStream('/app/web', 'web/1');
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'aws-a', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: aws.endpoint },
        { id: 'aws-b', organizationId: ORG_B, provider: 'aws', region: 'us-east-1', endpoint: aws.endpoint },
      ],
    }),
    config: { STREAM_POLL_INTERVAL_MS: 100, TAIL_WARMUP_MS: 1_000, TAIL_MAX_UPSTREAMS_PER_ORG: 1 },
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

const tail = (token: string, accountId: string, filterPattern: string) =>
  openSse(t.url, token, {
    accountId,
    logGroups: '/app/web',
    logStreamPrefix: 'web/',
    tail: true,
    startTime: Date.now(),
    filterPattern,
  });

/** The next error frame within `ms`, or undefined when none came. */
async function errorWithin(s: SseReader, ms: number): Promise<SseFrame | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const frame = await s.next(Math.max(1, deadline - Date.now())).catch(() => null);
    if (frame === undefined) return undefined;
    if (frame?.event === 'error') return frame;
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('distinct aws tail upstreams per organization', () => {
  it('refuses a second distinct key of one organization, not a shared one, not another organization', async () => {
    const first = await tail(TOKENS.owner, 'aws-a', 'ERROR');
    const shared = await tail(TOKENS.owner, 'aws-a', 'ERROR');
    const other = await tail(TOKENS.otherAdmin, 'aws-b', 'WARN');
    try {
      await sleep(1_500);
      expect(aws.liveTail.openSessions).toBe(2);
      const second = await tail(TOKENS.owner, 'aws-a', 'WARN');
      try {
        const refused = await errorWithin(second, 5_000);
        expect(refused?.data?.code).toBe('logs:stream:too-many-streams');
        expect((await second.next(2_000))?.data?.isFinal).toBe(true);
      } finally {
        second.close();
      }
      // The first key, its second subscriber and the other organization's key go on.
      for (const s of [first, shared, other]) expect(await errorWithin(s, 300)).toBeUndefined();
      expect(aws.liveTail.openSessions).toBe(2);
    } finally {
      first.close();
      shared.close();
      other.close();
    }
  });

  it('gives the share back when a key closes', async () => {
    await sleep(1_000);
    const again = await tail(TOKENS.owner, 'aws-a', 'WARN');
    try {
      expect(await errorWithin(again, 2_500)).toBeUndefined();
      expect(t.services.streams.upstreams().live).toBe(1);
    } finally {
      again.close();
    }
  });
});
