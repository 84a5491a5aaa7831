// Faults of the AWS endpoints, reached by a Berth child process through its fixture only (`aws`
// accounts with an `endpoint`): errors, throttling, hangs, resets, garbage. The log query answers
// the healthy sources and names the faulty one; the log stream ends with the error object and a
// final message; a certificate retry answers the catalogue's dependency failure; all within bounds.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { defaultQueryHandler, startFakeAws, type FakeAws, type ResultRow } from '../support/fake-aws/index.js';
import { openSse, type SseFrame } from '../support/log-stream-wire.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import {
  awsFaultWorld,
  CERT_ID,
  expectErrorObject,
  fillFakes,
  GROUPS,
  PER_SOURCE,
} from './support/faults-aws-world.js';
import { AWS_ENV, AWS_FAULTS, recordLatency, timed } from './support/faults-world.js';
import { FULL } from './support/summary.js';

const SOURCE_TIMEOUT_MS = 1_500;
const DEADLINE_MS = 2_500;
const CALL_TIMEOUT_MS = 1_500;
/** Scheduling noise of a busy 2-core machine on top of a configured limit. */
const SLACK_MS = 1_500;
const QUERY_BOUND_MS = DEADLINE_MS + SLACK_MS;
const CALL_BOUND_MS = CALL_TIMEOUT_MS + SLACK_MS;

/** Sources queried at once by the whole process (LOG_QUERY_CONCURRENCY × 4). */
const GATE = 8;
const FAULTS = FULL ? AWS_FAULTS : AWS_FAULTS.filter((f) => f.fast);

let healthy: FakeAws;
let faulty: FakeAws;
let dns: TestDnsServer;
let berth: Berth;
const base = Date.now() - 30 * 60_000;

beforeAll(async () => {
  healthy = await startFakeAws({ logUnexpectedErrors: false });
  faulty = await startFakeAws({ logUnexpectedErrors: false });
  dns = await startDnsServer();
  fillFakes(healthy, faulty, base);
  berth = await startBerth({
    fixture: awsFaultWorld(healthy, faulty, base),
    env: {
      ...AWS_ENV,
      LOG_QUERY_SOURCE_TIMEOUT_MS: String(SOURCE_TIMEOUT_MS),
      LOG_QUERY_DEADLINE_MS: String(DEADLINE_MS),
      // 8 sources at once per process: few enough for the test that abandoned queries give their slots back.
      LOG_QUERY_CONCURRENCY: String(GATE / 4),
      // The test fills the source gate from one key: its heavy-work share must not be what limits it.
      HEAVY_MAX_PER_PRINCIPAL: String(GATE),
      AWS_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
      AWS_MAX_ATTEMPTS: '3',
      INSIGHTS_POLL_INTERVAL_MS: '20',
      STREAM_POLL_INTERVAL_MS: '100',
      // The polling tail: the faults here hit its next FilterLogEvents call. A Live Tail session makes no call
      // while it streams; its faults (drops, exceptions, refusal, a hanging open) are logs-stream-live-tail.test.ts.
      AWS_LIVE_TAIL: 'off',
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '300',
      DNS_CACHE_TTL_MS: '0',
    },
  });
});
afterAll(async () => {
  await berth?.close();
  await Promise.all([healthy?.close(), faulty?.close(), dns?.close()]);
});
beforeEach(() => {
  for (const fake of [healthy, faulty]) {
    fake.clearFaults();
    fake.intercept('FilterLogEvents', undefined);
    fake.logs.options.queryHandler = defaultQueryHandler;
  }
});

const query = () =>
  berth.request('POST', '/cloud/logs/logs-insights', {
    token: TOKENS.owner,
    body: { moduleInstanceIds: ['mi-logs'], startTime: base - 60_000, endTime: Date.now() + 60_000 },
  });

const messages = (rows: { message: string }[]) => rows.map((r) => r.message).sort();
const expected = (...names: string[]) =>
  names.flatMap((n) => Array.from({ length: PER_SOURCE }, (_, i) => `INFO ${n} ${i}`)).sort();

describe('log query with one healthy and one faulty aws account', () => {
  it('answers every source whole (partial false) while nothing fails', async () => {
    const res = await query();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ partial: false, missedSources: [] });
    expect(messages(res.body.rows)).toEqual(expected('faulty', 'healthy', 'local'));
  });

  it('retries a throttled call, and the answer is whole', async () => {
    faulty.failNext('*', { code: 'ThrottlingException', times: 1 });
    const { ms, value: res } = await timed(query);
    expect(res.body).toMatchObject({ partial: false, missedSources: [] });
    expect(messages(res.body.rows)).toEqual(expected('faulty', 'healthy', 'local'));
    recordLatency('log query, aws: a throttled call then success (answer whole)', ms, QUERY_BOUND_MS);
  });

  it.each(FAULTS)(
    '$name: the faulty group is in missedSources, the healthy rows are there, within the deadline',
    async ({ name, spec }) => {
      faulty.failNext('*', spec);
      const { ms, value: res } = await timed(query);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ partial: true, missedSources: [GROUPS.faulty] });
      expect(messages(res.body.rows)).toEqual(expected('healthy', 'local'));
      recordLatency(`log query, aws: ${name} (partial, healthy rows kept)`, ms, QUERY_BOUND_MS);
    },
  );

  it('Insights rows whose @timestamp cannot be read make their group missed, never a silently short answer', async () => {
    faulty.logs.options.queryHandler = (q, ctx) => {
      const rows = defaultQueryHandler(q, ctx) as { rows: ResultRow[] };
      const garbled = rows.rows.map((row, i) =>
        i === 0 ? row.map((f) => (f.field === '@timestamp' ? { field: f.field, value: 'yesterday-ish' } : f)) : row,
      );
      return { rows: garbled, recordsMatched: garbled.length };
    };
    const { ms, value: res } = await timed(query);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ partial: true, missedSources: [GROUPS.faulty] });
    expect(messages(res.body.rows.filter((r: { message: string }) => !r.message.includes('faulty')))).toEqual(
      expected('healthy', 'local'),
    );
    recordLatency('log query, aws: Insights @timestamp unreadable (partial)', ms, QUERY_BOUND_MS);
  });

  it('queries abandoned on an endpoint that never answers (StopQuery hangs too) give their slots back', async () => {
    faulty.failNext('GetQueryResults', { hang: true, times: Number.POSITIVE_INFINITY });
    faulty.failNext('StopQuery', { hang: true, times: Number.POSITIVE_INFINITY });
    const only = (key: string) =>
      berth.request('POST', '/cloud/logs/logs-insights', {
        token: TOKENS.owner,
        body: { logSourceKeys: [key], startTime: base - 60_000, endTime: Date.now() + 60_000 },
      });
    // As many abandoned queries as the process runs sources at once.
    const abandoned = await Promise.all(Array.from({ length: GATE }, () => only('mi-logs::ls-faulty')));
    for (const res of abandoned) expect(res.body).toMatchObject({ partial: true, missedSources: [GROUPS.faulty] });
    await new Promise((r) => setTimeout(r, CALL_TIMEOUT_MS + 500));
    const { ms, value: local } = await timed(() => only('mi-logs::ls-local'));
    expect(local.body).toMatchObject({ partial: false, missedSources: [] });
    expect(messages(local.body.rows)).toEqual(expected('local'));
    recordLatency(`log query, local source after ${GATE} queries abandoned on a hung aws endpoint`, ms, QUERY_BOUND_MS);
  });

  it('a query that ends Failed upstream makes its group missed', async () => {
    faulty.logs.options.queryHandler = () => ({ rows: [], status: 'Failed' });
    const res = await query();
    expect(res.body).toMatchObject({ partial: true, missedSources: [GROUPS.faulty] });
    expect(messages(res.body.rows)).toEqual(expected('healthy', 'local'));
  });
});

const streamParams = (extra: Record<string, string> = {}) => ({
  accountId: 'acc-faulty',
  logGroups: GROUPS.faulty,
  logStreamPrefix: 'web',
  startTime: String(base - 60_000),
  ...extra,
});

/** Reads frames until the stream ends; throws past `timeoutMs`. */
async function readToEnd(s: Awaited<ReturnType<typeof openSse>>, timeoutMs: number): Promise<SseFrame[]> {
  const deadline = Date.now() + timeoutMs;
  const out: SseFrame[] = [];
  for (;;) {
    const frame = await s.next(Math.max(1, deadline - Date.now()));
    if (frame === undefined) return out;
    if (frame.comment === undefined) out.push(frame);
  }
}

/** The stream's last two frames are the error object and the final message, and nothing follows. */
function expectErrorThenFinal(frames: SseFrame[], requestId: string | null): void {
  const [error, final] = frames.slice(-2);
  expect(error?.event).toBe('error');
  expectErrorObject(error?.data, 'logs:upstream:failed', requestId);
  expect(final?.event).toBeUndefined();
  expect(final?.data).toEqual({ events: [], isFinal: true });
  expect(typeof final?.id).toBe('string');
}

describe('log stream on the faulty aws account', () => {
  it('delivers the history and a final message while nothing fails', async () => {
    const s = await openSse(berth.url, TOKENS.owner, streamParams());
    const frames = await readToEnd(s, 10_000);
    expect(frames.flatMap((f) => f.data.events.map((e: { message: string }) => e.message)).sort()).toEqual(
      expected('faulty'),
    );
    expect(frames.at(-1)?.data.isFinal).toBe(true);
  });

  it.each(FAULTS)(
    '$name in the history: event: error with the error object, then isFinal, within the call bound',
    async ({ name, spec }) => {
      faulty.failNext('*', spec);
      const { ms, value } = await timed(async () => {
        const s = await openSse(berth.url, TOKENS.owner, streamParams());
        return { frames: await readToEnd(s, CALL_BOUND_MS + 5_000), requestId: s.res.headers.get('x-request-id') };
      });
      expect(value.frames.flatMap((f) => f.data.events ?? [])).toEqual([]);
      expectErrorThenFinal(value.frames, value.requestId);
      recordLatency(`log stream history, aws: ${name} (error, then isFinal)`, ms, CALL_BOUND_MS);
    },
  );

  it.each(FULL ? FAULTS : FAULTS.filter((f) => f.spec.hang))(
    '$name during the tail: event: error, then isFinal, within the call bound',
    async ({ name, spec }) => {
      const s = await openSse(berth.url, TOKENS.owner, streamParams({ tail: 'true' }));
      expect((await s.events(PER_SOURCE)).map((e) => e.message).sort()).toEqual(expected('faulty'));
      faulty.failNext('*', spec);
      const { ms, value: frames } = await timed(() => readToEnd(s, CALL_BOUND_MS + 5_000));
      expectErrorThenFinal(frames, s.res.headers.get('x-request-id'));
      recordLatency(`log stream tail, aws: ${name} (error, then isFinal)`, ms, CALL_BOUND_MS + 500);
    },
  );

  it('a tail whose FilterLogEvents is throttled once then succeeds loses no event', async () => {
    const s = await openSse(berth.url, TOKENS.owner, streamParams({ tail: 'true' }));
    expect(await s.events(PER_SOURCE)).toHaveLength(PER_SOURCE);
    faulty.failNext('FilterLogEvents', { code: 'ThrottlingException', times: 1 });
    faulty.logs.putLogEvents(GROUPS.faulty, 'web/1', [{ timestamp: Date.now(), message: 'INFO after the throttling' }]);
    const after = await s.events(1, CALL_BOUND_MS + 3_000);
    expect(after.map((e) => e.message)).toEqual(['INFO after the throttling']);
    s.close();
  });

  it('events that come without a timestamp end the stream with an error instead of vanishing', async () => {
    faulty.intercept('FilterLogEvents', () => ({
      events: [
        {
          eventId: 'e-1',
          logStreamName: 'web/1',
          message: 'INFO readable',
          timestamp: base + 1,
          ingestionTime: base + 1,
        },
        { eventId: 'e-2', logStreamName: 'web/1', message: 'INFO no time' },
      ],
    }));
    const s = await openSse(berth.url, TOKENS.owner, streamParams());
    const frames = await readToEnd(s, CALL_BOUND_MS + 5_000);
    expectErrorThenFinal(frames, s.res.headers.get('x-request-id'));
  });

  it('events whose timestamp is not a number end the stream with an error', async () => {
    faulty.intercept('FilterLogEvents', () => ({
      events: [{ eventId: 'e-1', logStreamName: 'web/1', message: 'INFO x', timestamp: 'yesterday' }],
    }));
    const s = await openSse(berth.url, TOKENS.owner, streamParams());
    const frames = await readToEnd(s, CALL_BOUND_MS + 5_000);
    expectErrorThenFinal(frames, s.res.headers.get('x-request-id'));
  });
});

const retry = (token: string = TOKENS.owner) =>
  berth.request('POST', `/managed-certificates/${CERT_ID}/retry-validation`, { token });

describe('certificate retry on the faulty aws account', () => {
  it("answers ACM's status while nothing fails", async () => {
    const res = await retry();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { certificateId: CERT_ID, status: 'PENDINGVALIDATION' } });
  });

  const cases = FAULTS.flatMap((fault) => [
    { ...fault, op: 'DescribeCertificate', code: 'certificates:authority:failed' },
    ...(FULL || fault.spec.hang
      ? [{ ...fault, op: 'ListHostedZonesByName', code: 'certificates:dns-zone:failed' }]
      : []),
  ]);
  it.each(cases)(
    '$name on $op: a 502 $code naming no endpoint, within the call bound; the next retry works',
    async ({ name, spec, op, code }) => {
      faulty.failNext(op, spec);
      const { ms, value: res } = await timed(() => retry());
      expectError(res, 502, code);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(new URL(faulty.endpoint).host);
      expect(text).not.toMatch(/127\.0\.0\.1|ECONN|localhost/);
      expect(res.body.isInternal).toBeUndefined();
      recordLatency(`certificate retry, aws: ${name} on ${op} (502 ${code})`, ms, CALL_BOUND_MS);
      faulty.clearFaults();
      const again = await retry();
      expect(again.status).toBe(200);
    },
  );

  it('shows a superadmin the internal side of the same failure', async () => {
    faulty.failNext('DescribeCertificate', { code: 'ServiceUnavailableException', times: Number.POSITIVE_INFINITY });
    const res = await retry(TOKENS.superadmin);
    expectError(res, 502, 'certificates:authority:failed');
    expect(res.body.isInternal).toBe(true);
  });
});
