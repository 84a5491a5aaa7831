// Live tails of local accounts are woken by the ingest itself (a notification on commit, migration 009), not by
// their next poll: with a poll interval of a minute, an event sent through the ingest route reaches an open tail
// at once; a write to another account does not wake it; and without the change feed the poll still delivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';

const world = () =>
  mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' },
      { id: 'local-a2', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' },
    ],
  });

const ingest = (t: TestApp, accountId: string, message: string) =>
  t.request('POST', '/cloud/logs/local/events', {
    token: TOKENS.admin,
    body: { accountId, region: 'eu-west-1', logGroup: 'g', logStream: 's', events: [{ message }] },
  });

const tail = (t: TestApp, accountId: string) =>
  openSse(t.url, TOKENS.viewer, { accountId, logGroups: 'g', logStreamPrefix: 's', tail: true });

describe('local tails woken by ingest', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { STREAM_POLL_INTERVAL_MS: 60_000 } });
  });
  afterAll(async () => t?.close());

  it('delivers an ingested event within a second although the next poll is a minute away', async () => {
    const sse = await tail(t, 'local-a');
    try {
      // The tail's first read is a minute away too. Give the (empty) history a moment to end and the tail to begin.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const polls = t.services.streams.hub.polls;
      const started = Date.now();
      expect((await ingest(t, 'local-a', 'woken one')).status).toBe(202);
      const events = await sse.events(1, 5_000);
      expect(events.map((e) => e.message)).toEqual(['woken one']);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(t.services.streams.hub.polls).toBeGreaterThan(polls);
    } finally {
      sse.close();
    }
  });

  it('is not woken by a write to another account', async () => {
    const sse = await tail(t, 'local-a');
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const polls = t.services.streams.hub.polls;
      expect((await ingest(t, 'local-a2', 'elsewhere')).status).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(t.services.streams.hub.polls).toBe(polls);
    } finally {
      sse.close();
    }
  });
});

describe('local tails without the change feed (caches off)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { STREAM_POLL_INTERVAL_MS: 200, CACHE_MAX_ENTRIES: 0 } });
  });
  afterAll(async () => t?.close());

  it('still delivers at the next poll', async () => {
    const sse = await tail(t, 'local-a');
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await ingest(t, 'local-a', 'polled')).status).toBe(202);
      expect((await sse.events(1, 5_000)).map((e) => e.message)).toEqual(['polled']);
    } finally {
      sse.close();
    }
  });
});
