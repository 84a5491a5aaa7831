// The log explorer's live tail (ui/src/lib/live-tail.ts) against a real Berth over HTTP, local provider: events
// written during the test arrive once; a severed connection and a pause both resume from Last-Event-ID without
// loss or repeats; a refused stream (401, another organization's account) ends in 'error' without retrying;
// two (account, region) groups are two streams.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LiveTail, type LiveTailOptions } from '../../ui/src/lib/live-tail.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';
import {
  collector,
  exactlyOnce,
  type TcpProxy,
  recordingFetch,
  sleep,
  startProxy,
  until,
} from './support/tail-harness.js';

let t: TestApp;
let proxy: TcpProxy;
const tails: LiveTail[] = [];

beforeAll(async () => {
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' },
        { id: 'local-a2', organizationId: 'org-a', provider: 'local', region: 'us-east-1' },
        { id: 'local-b', organizationId: 'org-b', provider: 'local', region: 'eu-west-1' },
      ],
    }),
    config: { STREAM_POLL_INTERVAL_MS: 100, STREAM_BATCH_SIZE: 20, STREAM_KEEPALIVE_MS: 1_000 },
  });
  proxy = await startProxy(t.url);
});
afterEach(() => {
  for (const tail of tails.splice(0)) tail.stop();
});
afterAll(async () => {
  await proxy?.close();
  await t?.close();
});

let counter = 0;
async function ingest(accountId: string, region: string, n: number, tag: string, timestamp?: number) {
  const messages = Array.from({ length: n }, (_, i) => `INFO ${tag} ${++counter} #${i}`);
  const res = await t.request('POST', '/cloud/logs/local/events', {
    token: TOKENS.admin,
    body: {
      accountId,
      region,
      logGroup: 'app',
      logStream: 'web/1',
      events: messages.map((message) => ({ message, timestamp })),
    },
  });
  expect(res.status).toBe(202);
  return messages;
}

const groupA = { accountId: 'local-a', region: 'eu-west-1', logGroups: ['app'], logStreamPrefix: 'web/' };

function tail(over: Partial<LiveTailOptions> & Pick<LiveTailOptions, 'onEvents'>): LiveTail {
  const lt = new LiveTail({
    groups: [groupA],
    token: TOKENS.viewer,
    baseUrl: t.url,
    backoff: { initialMs: 100 },
    ...over,
  });
  tails.push(lt);
  lt.start();
  return lt;
}

describe('LiveTail against Berth', () => {
  it('delivers an event written after the start once, with its fields and a unique key, and nothing older', async () => {
    await ingest('local-a', 'eu-west-1', 1, 'before the start', Date.now() - 60_000);
    const c = collector();
    const rec = recordingFetch();
    const lt = tail({ ...c, fetch: rec.fetch });
    await until(() => lt.state === 'live', 'live');
    const sent = await ingest('local-a', 'eu-west-1', 3, 'after');
    await until(() => c.events.length >= 3, 'three events');
    await sleep(400);
    exactlyOnce(c.messages(), sent);
    const first = c.events[0]!;
    expect(first.group).toBe(0);
    expect(first.event).toMatchObject({ logStreamName: 'web/1', level: 'INFO' });
    expect(first.event.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(first.event.ingestionTime).toMatch(/Z$/);
    expect(new Set(c.events.map((e) => e.event.key)).size).toBe(3);
    expect(rec.calls).toHaveLength(1);
    const q = rec.calls[0]!.url.searchParams;
    expect([q.get('accountId'), q.get('region'), q.get('tail'), q.getAll('logGroups')]).toEqual([
      'local-a',
      'eu-west-1',
      'true',
      ['app'],
    ]);
    expect(rec.calls[0]!.headers.authorization).toBe(`Bearer ${TOKENS.viewer}`);
    expect(new Set(c.statuses.map((s) => s.state))).toEqual(new Set(['connecting', 'live']));
  });

  it('a connection severed mid-stream reconnects with Last-Event-ID: nothing lost, nothing twice', async () => {
    const c = collector();
    const rec = recordingFetch();
    let severed = false;
    const lt = tail({
      baseUrl: proxy.url,
      fetch: rec.fetch,
      onState: c.onState,
      onEvents: (events, group) => {
        c.onEvents(events, group);
        // Cut after the first message of the 200: the other nine messages are in flight or not yet sent.
        if (!severed) {
          severed = true;
          proxy.cut();
        }
      },
    });
    await until(() => lt.state === 'live', 'live');
    const burst = await ingest('local-a', 'eu-west-1', 200, 'burst');
    await until(() => severed && c.seen('reconnecting'), 'the cut to be noticed');
    const during = await ingest('local-a', 'eu-west-1', 5, 'while cut');
    await until(() => rec.calls.length >= 2 && lt.state === 'live', 'the reconnection');
    const after = await ingest('local-a', 'eu-west-1', 5, 'after');
    const all = [...burst, ...during, ...after];
    await until(() => c.events.length >= all.length, `${all.length} events`, 15_000);
    await sleep(400);
    exactlyOnce(c.messages(), all);
    const reconnecting = c.statuses.find((s) => s.state === 'reconnecting')!;
    expect(reconnecting.streams[0]!.lastEventId).toBeTruthy();
    expect(rec.calls[0]!.headers['last-event-id']).toBeUndefined();
    expect(rec.calls[1]!.headers['last-event-id']).toBe(reconnecting.streams[0]!.lastEventId);
  });

  it('pause closes the connection and resume continues from the last id: nothing lost or repeated', async () => {
    const c = collector();
    const rec = recordingFetch();
    const lt = tail({ ...c, fetch: rec.fetch });
    await until(() => lt.state === 'live', 'live');
    const first = await ingest('local-a', 'eu-west-1', 3, 'first');
    await until(() => c.events.length >= 3, 'the first events');
    lt.pause();
    expect(lt.state).toBe('paused');
    const pausedAt = lt.status.streams[0]!.lastEventId;
    expect(pausedAt).toBeTruthy();
    await until(() => t.services.streams.activeStreams === 0, 'the server to see the stream closed');
    const paused = await ingest('local-a', 'eu-west-1', 4, 'paused');
    await sleep(500);
    expect(c.events).toHaveLength(3);
    expect(rec.calls).toHaveLength(1);
    lt.resume();
    await until(() => lt.state === 'live', 'live again');
    const later = await ingest('local-a', 'eu-west-1', 2, 'later');
    await until(() => c.events.length >= 9, 'every event');
    await sleep(400);
    exactlyOnce(c.messages(), [...first, ...paused, ...later]);
    expect(rec.calls).toHaveLength(2);
    expect(rec.calls[1]!.headers['last-event-id']).toBe(pausedAt);
    expect(c.statuses.map((s) => s.state)).toContain('paused');
  });

  it('a 401 ends in error with the error object, without retrying', async () => {
    const c = collector();
    const rec = recordingFetch();
    const lt = tail({
      ...c,
      fetch: rec.fetch,
      token: 'berth_k-nope_not-a-real-secret-000000000',
      backoff: { initialMs: 20 },
    });
    await until(() => lt.state === 'error', 'error');
    await sleep(300);
    expect(rec.calls).toHaveLength(1);
    expect(lt.status.streams[0]).toMatchObject({ state: 'error', httpStatus: 401 });
    expect(lt.status.error?.code).toMatch(/^auth:/);
    expect(c.seen('reconnecting')).toBe(false);
  });

  it("another organization's account is a 404 error, not retried (tenant isolation)", async () => {
    const c = collector();
    const rec = recordingFetch();
    const lt = tail({
      ...c,
      fetch: rec.fetch,
      groups: [{ ...groupA, accountId: 'local-b' }],
      backoff: { initialMs: 20 },
    });
    await until(() => lt.state === 'error', 'error');
    await sleep(300);
    expect(rec.calls).toHaveLength(1);
    expect(lt.status).toMatchObject({ state: 'error', error: { code: 'logs:account:not-found' } });
    expect(c.events).toHaveLength(0);
  });

  it('two (account, region) groups open two streams, each delivering its own events with its group index', async () => {
    const c = collector();
    const rec = recordingFetch();
    const lt = tail({
      ...c,
      fetch: rec.fetch,
      groups: [groupA, { accountId: 'local-a2', region: 'us-east-1', logGroups: ['app'], logStreamNames: ['web/1'] }],
    });
    await until(() => lt.status.streams.every((s) => s.state === 'live'), 'both live');
    expect(rec.calls.map((call) => call.url.searchParams.get('accountId')).sort()).toEqual(['local-a', 'local-a2']);
    const a = await ingest('local-a', 'eu-west-1', 2, 'A');
    const b = await ingest('local-a2', 'us-east-1', 3, 'B');
    await until(() => c.events.length >= 5, 'five events');
    await sleep(300);
    exactlyOnce(c.messages(0), a);
    exactlyOnce(c.messages(1), b);
    lt.stop();
    expect(lt.status.streams.map((s) => s.state)).toEqual(['ended', 'ended']);
    expect(lt.state).toBe('ended');
  });
});
