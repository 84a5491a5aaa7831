// GET /cloud/logs/stream of several log groups on `local` accounts: the history comes in one
// (timestamp, eventId) order across the groups — each group read on its own index scan and merged by
// the database — in batches of STREAM_BATCH_SIZE, and every message's id resumes right after its events.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const REGION = 'eu-west-1';
const T0 = Date.UTC(2024, 2, 1);
const BATCH = 7;

let t: TestApp;
const readers: SseReader[] = [];

beforeAll(async () => {
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: 'acc-a', organizationId: ORG_A, provider: 'local', region: REGION }],
    }),
    config: { STREAM_POLL_INTERVAL_MS: 50, STREAM_BATCH_SIZE: BATCH },
  });
});
afterEach(() => {
  for (const r of readers.splice(0)) r.close();
});
afterAll(async () => {
  await t?.close();
});

interface Written {
  group: string;
  stream: string;
  message: string;
  timestamp: number;
}

/** One request per group and stream, in this order: ids grow with it, so ties within a millisecond follow it. */
async function ingest(events: Written[]): Promise<void> {
  const requests = new Map<string, Written[]>();
  for (const e of events) {
    const key = JSON.stringify([e.group, e.stream]);
    requests.set(key, [...(requests.get(key) ?? []), e]);
  }
  for (const batch of requests.values()) {
    const res = await t.request('POST', '/cloud/logs/local/events', {
      token: TOKENS.admin,
      body: {
        accountId: 'acc-a',
        region: REGION,
        logGroup: batch[0]!.group,
        logStream: batch[0]!.stream,
        events: batch.map((e) => ({ message: e.message, timestamp: e.timestamp })),
      },
    });
    expect(res.status, res.text).toBe(202);
  }
}

const WINDOW = { startTime: String(T0), endTime: String(T0 + 60_000) };

async function open(params: Record<string, string | string[]>, lastEventId?: string): Promise<SseReader> {
  const r = await openSse(
    t.url,
    TOKENS.owner,
    { accountId: 'acc-a', region: REGION, ...params },
    lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
  );
  expect(r.res.status).toBe(200);
  readers.push(r);
  return r;
}

const texts = (events: { message: string }[]) => events.map((e) => e.message);

/**
 * Three groups, unevenly dense (/g/a early, /g/c late, /g/b sparse), sharing milliseconds with each other
 * and with themselves; a fourth group and another stream in the same milliseconds that the stream leaves out.
 */
function world(prefix: string): { written: Written[]; expected: string[]; groups: string[] } {
  const groups = ['a', 'b', 'c'].map((g) => `${prefix}/${g}`);
  const written: Written[] = [];
  const at = (g: string, ms: number, n = 1, stream = 's/1') => {
    for (let i = 0; i < n; i++) written.push({ group: g, stream, message: `${g} ${ms} ${i}`, timestamp: T0 + ms });
  };
  for (let ms = 0; ms < 20; ms++) at(groups[0]!, ms, ms % 3 === 0 ? 3 : 1);
  for (let ms = 0; ms < 40; ms += 5) at(groups[1]!, ms, 2);
  for (let ms = 15; ms < 40; ms++) at(groups[2]!, ms, ms % 4 === 0 ? 4 : 1);
  for (let ms = 0; ms < 40; ms += 2) at(`${prefix}/other`, ms);
  for (let ms = 0; ms < 40; ms += 3) at(groups[1]!, ms, 1, 'x/1');
  // Written group by group: within a millisecond, /a's ids come before /b's, and /b's before /c's.
  const rank = (w: Written) => groups.indexOf(w.group);
  const expected = written
    .filter((w) => rank(w) >= 0 && w.stream.startsWith('s/'))
    .map((w, i) => ({ w, i }))
    .sort((p, q) => p.w.timestamp - q.w.timestamp || rank(p.w) - rank(q.w) || p.i - q.i)
    .map(({ w }) => w.message);
  return { written, expected, groups };
}

describe('history of several log groups', () => {
  it('comes in (timestamp, eventId) order across the groups, in batches of STREAM_BATCH_SIZE, each event once', async () => {
    const { written, expected, groups } = world('/merge');
    await ingest(written);
    const s = await open({ logGroups: groups.join(','), logStreamPrefix: 's/', ...WINDOW });
    expect(texts(await s.events(Infinity))).toEqual(expected);
    const sizes = s.messages().map((m) => m.data.events.length);
    expect(sizes.slice(0, -2).every((n) => n === BATCH)).toBe(true);
    expect(sizes.at(-1)).toBe(0);

    // A group named twice, and the groups in another order, read the same events.
    const again = await open({
      logGroups: [groups[2]!, groups[0]!, groups[1]!, groups[0]!],
      logStreamPrefix: 's/',
      ...WINDOW,
    });
    expect(texts(await again.events(Infinity))).toEqual(expected);
  });

  it("resumes from every message's id with exactly the events after it, across ties between groups", async () => {
    const { written, expected, groups } = world('/resume');
    await ingest(written);
    const params = { logGroups: groups.join(','), logStreamNames: 's/1', ...WINDOW };
    const s = await open(params);
    expect(texts(await s.events(Infinity))).toEqual(expected);
    const messages = s.messages().filter((m) => m.data.events.length > 0);
    expect(messages.length).toBeGreaterThan(10);
    let delivered = 0;
    for (const m of messages) {
      delivered += m.data.events.length;
      const resumed = await open(params, m.id);
      expect(texts(await resumed.events(Infinity)), `resumed after ${delivered} events`).toEqual(
        expected.slice(delivered),
      );
      resumed.close();
    }
  });

  it('with tail: history of every group up to the switch, then what is written after it, each event once', async () => {
    const { written, expected, groups } = world('/tail');
    await ingest(written);
    const s = await open({ logGroups: groups.join(','), logStreamPrefix: 's/', tail: 'true', startTime: String(T0) });
    expect(texts(await s.events(expected.length))).toEqual(expected);
    const later: Written[] = groups.map((g, i) => ({ group: g, stream: 's/2', message: `later ${i}`, timestamp: T0 }));
    await ingest([...later, { group: `${groups[0]}x`, stream: 's/2', message: 'not mine', timestamp: T0 }]);
    const live = texts(await s.events(later.length));
    expect([...live].sort()).toEqual(later.map((w) => w.message));
  });

  it('with an empty logStreamPrefix: every stream of the groups, streams created after the start included', async () => {
    const groups = ['/whole/a', '/whole/b'];
    await ingest([
      { group: groups[0]!, stream: 'web/1', message: 'old web', timestamp: T0 },
      { group: groups[1]!, stream: 'worker/1', message: 'old worker', timestamp: T0 + 1 },
      { group: '/whole/other', stream: 'web/1', message: 'not mine', timestamp: T0 + 2 },
    ]);
    const s = await open({ logGroups: groups.join(','), logStreamPrefix: '', tail: 'true', startTime: String(T0) });
    expect(texts(await s.events(2))).toEqual(['old web', 'old worker']);
    // A container started after the tail: a stream name nobody has seen before.
    await ingest([
      { group: groups[1]!, stream: 'brand-new/7f3a', message: 'new stream', timestamp: T0 + 3 },
      { group: '/whole/other', stream: 'brand-new/7f3a', message: 'still not mine', timestamp: T0 + 3 },
    ]);
    const [live] = await s.events(1);
    expect(live).toMatchObject({ message: 'new stream', logStreamName: 'brand-new/7f3a' });
  });

  it('with an empty logStreamPrefix and no tail: the history of every stream of the groups', async () => {
    await ingest([
      { group: '/hist-all/a', stream: 'x', message: 'x1', timestamp: T0 },
      { group: '/hist-all/a', stream: 'y/z', message: 'y1', timestamp: T0 + 1 },
    ]);
    const s = await open({ logGroups: '/hist-all/a', logStreamPrefix: '', ...WINDOW });
    // Asks for more than there are: read up to the final message.
    expect(texts(await s.events(3))).toEqual(['x1', 'y1']);
    expect(s.messages().at(-1)?.data.isFinal).toBe(true);
  });
});
