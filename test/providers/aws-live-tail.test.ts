// CloudWatch Logs Live Tail through the real SDK client against the fake's StartLiveTail event stream: messages,
// filters, sampling, how a session ends (timeout, streaming exception, dropped, stalled, refused), cancellation;
// log group ARNs; the AWS account id lookup (STS GetCallerIdentity) and its cache.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AwsAccountIds } from '../../src/providers/aws/account-id.js';
import type { AwsAccount, AwsClients } from '../../src/providers/aws/clients.js';
import {
  type LiveTailEvent,
  LiveTailEndedError,
  type LiveTailInput,
  type LiveTailMessage,
  type LiveTailOptions,
  LiveTailRefusedError,
  liveTail,
  logGroupArn,
} from '../../src/providers/aws/log-stream/live-tail.js';
import { FAKE_ACCOUNT_ID, type FakeAws } from '../support/fake-aws/index.js';
import { startFakeAwsClients, stopFakeAwsClients } from '../support/fake-aws-clients.js';

const T = Date.UTC(2024, 0, 15, 12, 0, 0);
const REGION = 'eu-west-1';

let aws: FakeAws;
let clients: AwsClients;
const controllers: AbortController[] = [];

beforeEach(async () => {
  ({ aws, clients } = await startFakeAwsClients());
  aws.liveTail.options.updateIntervalMs = 100;
});
afterEach(async () => {
  for (const c of controllers.splice(0)) c.abort();
  await stopFakeAwsClients(aws, clients);
});

const account = (extra: Partial<AwsAccount> = {}): AwsAccount => ({
  id: 'acct-1',
  region: REGION,
  roleArn: null,
  externalId: null,
  endpoint: aws.endpoint,
  ...extra,
});
const arn = (group: string) => logGroupArn(group, REGION, FAKE_ACCOUNT_ID);

function open(input: LiveTailInput, options: Partial<LiveTailOptions> = {}) {
  const controller = new AbortController();
  controllers.push(controller);
  const messages = liveTail(clients.cloudWatchLogs(account(), REGION), input, controller.signal, options);
  return { messages, controller };
}

async function within<T>(ms: number, work: Promise<T>, what = 'the live tail'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not move within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

const next = (messages: AsyncGenerator<LiveTailMessage>, ms = 3_000) => within(ms, messages.next());

/** Reads updates until `count` events came; returns them and the updates read. */
async function eventsUntil(messages: AsyncGenerator<LiveTailMessage>, count: number) {
  const events: LiveTailEvent[] = [];
  const updates: Extract<LiveTailMessage, { kind: 'update' }>[] = [];
  while (events.length < count) {
    const r = await next(messages);
    if (r.done) throw new Error('the live tail ended');
    if (r.value.kind !== 'update') throw new Error(`unexpected ${r.value.kind}`);
    updates.push(r.value);
    events.push(...r.value.events);
  }
  return { events, updates };
}

/** Reads until the generator throws; returns the error and how long after the call it came. */
async function ending(
  messages: AsyncGenerator<LiveTailMessage>,
  ms = 5_000,
): Promise<{ error: unknown; after: number }> {
  const started = Date.now();
  try {
    for (;;) {
      const r = await next(messages, ms);
      if (r.done) throw new Error('the live tail returned instead of throwing');
    }
  } catch (error) {
    return { error, after: Date.now() - started };
  }
}

const expected = (
  group: string,
  e: { logStreamName: string; message: string; timestamp: number; ingestionTime: number },
) => ({
  logGroupIdentifier: group,
  logStreamName: e.logStreamName,
  message: e.message,
  timestamp: e.timestamp,
  ingestionTime: e.ingestionTime,
});

describe('liveTail', () => {
  it('starts, sends empty updates, then updates carrying the events put, as stored', async () => {
    aws.logs.createLogGroup('/app');
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    expect(await next(messages)).toEqual({ done: false, value: { kind: 'start' } });
    expect((await next(messages)).value).toEqual({ kind: 'update', events: [], sampled: false });

    const stored = aws.logs.putLogEvents('/app', 'web/1', [
      { timestamp: T, message: 'hello', ingestionTime: T + 5 },
      { timestamp: T + 1, message: 'world' },
    ]);
    const { events, updates } = await eventsUntil(messages, 2);
    expect(events).toEqual(stored.map((e) => expected(arn('/app'), e)));
    expect(updates.every((u) => !u.sampled)).toBe(true);
    expect(aws.liveTail.started).toBe(1);
    expect(aws.liveTail.openSessions).toBe(1);
    expect(aws.liveTail.sessions[0]?.input).toEqual({ logGroupIdentifiers: [arn('/app')] });
  });

  it('honours the filter pattern, and the stream names or prefixes of a single group', async () => {
    for (const g of ['/app', '/db']) aws.logs.createLogGroup(g);
    const byPattern = open({ logGroupIdentifiers: [arn('/app'), `${arn('/db')}:*`], logEventFilterPattern: 'ERROR' });
    const byPrefix = open({ logGroupIdentifiers: [arn('/app')], logStreamNamePrefixes: ['web/'] });
    const byName = open({ logGroupIdentifiers: [arn('/app')], logStreamNames: ['api/2'] });
    for (const s of [byPattern, byPrefix, byName]) expect((await next(s.messages)).value).toEqual({ kind: 'start' });

    const app = aws.logs.putLogEvents('/app', 'web/1', [
      { timestamp: T, message: 'ERROR one' },
      { timestamp: T + 1, message: 'fine' },
    ]);
    const api = aws.logs.putLogEvents('/app', 'api/2', [{ timestamp: T + 2, message: 'ERROR two' }]);
    const db = aws.logs.putLogEvents('/db', 'web/1', [{ timestamp: T + 3, message: 'ERROR three' }]);
    // An event no session's filter lets through.
    aws.logs.putLogEvents('/app', 'api/1', [{ timestamp: T + 4, message: 'other' }]);

    expect((await eventsUntil(byPattern.messages, 3)).events).toEqual([
      expected(arn('/app'), app[0]!),
      expected(arn('/app'), api[0]!),
      expected(`${arn('/db')}:*`, db[0]!),
    ]);
    expect((await eventsUntil(byPrefix.messages, 2)).events).toEqual(app.map((e) => expected(arn('/app'), e)));
    expect((await eventsUntil(byName.messages, 1)).events).toEqual([expected(arn('/app'), api[0]!)]);
    // Nothing else came: one more round of updates is empty for each.
    for (const s of [byPattern, byPrefix, byName]) {
      expect((await next(s.messages)).value).toEqual({ kind: 'update', events: [], sampled: false });
    }
  });

  it('is refused (InvalidParameterException) for stream filters over two groups', async () => {
    for (const g of ['/app', '/db']) aws.logs.createLogGroup(g);
    const { messages } = open({ logGroupIdentifiers: [arn('/app'), arn('/db')], logStreamNames: ['web/1'] });
    const { error } = await ending(messages);
    expect(error).toBeInstanceOf(LiveTailRefusedError);
    expect((error as LiveTailRefusedError).reason).toBe('InvalidParameterException');
    expect(aws.liveTail.started).toBe(0);
  });

  it('marks an update sampled and sends at most 500 events in the second of a burst', async () => {
    aws.logs.createLogGroup('/app');
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    expect((await next(messages)).value).toEqual({ kind: 'start' });
    aws.logs.putLogEvents(
      '/app',
      'web/1',
      Array.from({ length: 800 }, (_, i) => ({ timestamp: T + i, message: `m${i}` })),
    );
    const { events, updates } = await eventsUntil(messages, 1);
    expect(events).toHaveLength(500);
    expect(updates.at(-1)?.sampled).toBe(true);
    expect(events.map((e) => e.message)).toEqual(Array.from({ length: 500 }, (_, i) => `m${i}`));
    // The rest of the burst is not sent later: sampling drops it.
    const later = await next(messages);
    expect(later.value).toEqual({ kind: 'update', events: [], sampled: false });
    expect(aws.liveTail.sessions[0]?.eventsSent).toBe(500);
  });

  it('ends with LiveTailEndedError(timeout) when AWS times the session out', async () => {
    aws.logs.createLogGroup('/app');
    aws.liveTail.options.sessionTimeoutMs = 500;
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    const { error, after } = await ending(messages);
    expect(error).toBeInstanceOf(LiveTailEndedError);
    expect((error as LiveTailEndedError).reason).toBe('timeout');
    expect(after).toBeGreaterThanOrEqual(400);
    expect(aws.liveTail.sessions[0]?.endedBy).toBe('timeout');
  });

  it('ends with LiveTailEndedError(streaming) on SessionStreamingException', async () => {
    aws.logs.createLogGroup('/app');
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    expect((await next(messages)).value).toEqual({ kind: 'start' });
    expect(aws.liveTail.sendStreamingException()).toBe(1);
    const { error } = await ending(messages);
    expect(error).toBeInstanceOf(LiveTailEndedError);
    expect((error as LiveTailEndedError).reason).toBe('streaming');
  });

  it('ends with LiveTailEndedError(dropped) promptly when the connection drops mid-stream', async () => {
    aws.logs.createLogGroup('/app');
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    expect((await next(messages)).value).toEqual({ kind: 'start' });
    expect(aws.liveTail.dropAll()).toBe(1);
    const { error, after } = await ending(messages);
    expect(error).toBeInstanceOf(LiveTailEndedError);
    expect((error as LiveTailEndedError).reason).toBe('dropped');
    expect(after).toBeLessThan(1_000); // well before the 10 s idle limit
  });

  it('counts a session without frames for idleTimeoutMs as dropped, and closes it', async () => {
    aws.logs.createLogGroup('/app');
    aws.liveTail.options.updateIntervalMs = 60_000;
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] }, { idleTimeoutMs: 300 });
    expect((await next(messages)).value).toEqual({ kind: 'start' });
    const { error, after } = await ending(messages);
    expect((error as LiveTailEndedError).reason).toBe('dropped');
    expect(after).toBeGreaterThanOrEqual(250);
    await within(2_000, untilClosed());
    expect(aws.liveTail.sessions[0]?.endedBy).toBe('client-closed');
  });

  it('counts an opening that does not answer within openTimeoutMs as dropped', async () => {
    aws.logs.createLogGroup('/app');
    aws.failNext('StartLiveTail', { hang: true });
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] }, { openTimeoutMs: 300 });
    const { error, after } = await ending(messages);
    expect((error as LiveTailEndedError).reason).toBe('dropped');
    expect(after).toBeLessThan(2_000);
  });

  it.each([
    ['AccessDeniedException', {}, 'AccessDeniedException', 1],
    ['UnrecognizedClientException', {}, 'UnrecognizedClientException', 1],
    ['InvalidOperationException', {}, 'InvalidOperationException', 1],
    ['an unknown operation (501)', { code: 'NotImplemented', status: 501 }, 'NotImplemented', 1],
  ])('is refused (LiveTailRefusedError) on %s', async (code, fault, reason, calls) => {
    aws.logs.createLogGroup('/app');
    aws.failNext('StartLiveTail', { code, ...fault });
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    const { error } = await ending(messages);
    expect(error).toBeInstanceOf(LiveTailRefusedError);
    expect((error as LiveTailRefusedError).reason).toBe(reason);
    expect((error as LiveTailRefusedError).cause).toMatchObject({ name: reason });
    expect(aws.callsTo('StartLiveTail')).toHaveLength(calls);
  });

  it('is refused (LimitExceededException) past the concurrent session quota', async () => {
    aws.logs.createLogGroup('/app');
    aws.liveTail.options.maxConcurrentSessions = 1;
    const first = open({ logGroupIdentifiers: [arn('/app')] });
    expect((await next(first.messages)).value).toEqual({ kind: 'start' });
    const { error } = await ending(open({ logGroupIdentifiers: [arn('/app')] }).messages);
    expect((error as LiveTailRefusedError).reason).toBe('LimitExceededException');
  });

  it('is dropped (the caller backs off) when throttled or on 5xx after the retries', async () => {
    aws.logs.createLogGroup('/app');
    aws.failNext('StartLiveTail', { code: 'ThrottlingException', times: 3 });
    const throttled = await ending(open({ logGroupIdentifiers: [arn('/app')] }).messages);
    expect((throttled.error as LiveTailEndedError).reason).toBe('dropped');
    aws.failNext('StartLiveTail', { code: 'ServiceUnavailableException', times: 3 });
    const unavailable = await ending(open({ logGroupIdentifiers: [arn('/app')] }).messages);
    expect((unavailable.error as LiveTailEndedError).reason).toBe('dropped');
    expect(aws.callsTo('StartLiveTail')).toHaveLength(6);
  });

  it('returns quietly and promptly on abort, and the connection closes', async () => {
    aws.logs.createLogGroup('/app');
    aws.liveTail.options.updateIntervalMs = 60_000;
    const { messages, controller } = open({ logGroupIdentifiers: [arn('/app')] });
    expect((await next(messages)).value).toEqual({ kind: 'start' });
    const pending = messages.next();
    controller.abort();
    expect(await within(500, pending)).toEqual({ done: true, value: undefined });
    await within(2_000, untilClosed());
    expect(aws.liveTail.sessions[0]?.endedBy).toBe('client-closed');
  });

  it('closes the connection when the caller stops iterating', async () => {
    aws.logs.createLogGroup('/app');
    const { messages } = open({ logGroupIdentifiers: [arn('/app')] });
    for await (const m of messages) if (m.kind === 'update') break;
    await within(2_000, untilClosed());
    expect(aws.liveTail.sessions[0]?.endedBy).toBe('client-closed');
  });

  it('returns at once when aborted during the opening', async () => {
    aws.logs.createLogGroup('/app');
    aws.failNext('StartLiveTail', { hang: true });
    const { messages, controller } = open({ logGroupIdentifiers: [arn('/app')] });
    const pending = messages.next();
    setTimeout(() => controller.abort(), 100);
    expect(await within(1_000, pending)).toEqual({ done: true, value: undefined });
  });
});

async function untilClosed(): Promise<void> {
  while (aws.liveTail.openSessions > 0) await new Promise((r) => setTimeout(r, 10));
}

describe('logGroupArn', () => {
  it.each([
    ['/app', 'eu-west-1', 'arn:aws:logs:eu-west-1:123456789012:log-group:/app'],
    ['/app', 'cn-north-1', 'arn:aws-cn:logs:cn-north-1:123456789012:log-group:/app'],
    ['/app', 'us-gov-west-1', 'arn:aws-us-gov:logs:us-gov-west-1:123456789012:log-group:/app'],
    [
      'arn:aws:logs:us-east-1:210987654321:log-group:/other:*',
      'eu-west-1',
      'arn:aws:logs:us-east-1:210987654321:log-group:/other',
    ],
    [
      'arn:aws:logs:us-east-1:210987654321:log-group:/other',
      'eu-west-1',
      'arn:aws:logs:us-east-1:210987654321:log-group:/other',
    ],
  ])('%s in %s is %s', (name, region, want) => {
    expect(logGroupArn(name, region, '123456789012')).toBe(want);
  });
});

describe('AwsAccountIds', () => {
  const ROLE_A = 'arn:aws:iam::210987654321:role/berth-a';
  const ROLE_B = 'arn:aws:iam::111122223333:role/berth-b';

  it('asks STS once for two gets (concurrent ones share the request), again after the role changes', async () => {
    const ids = new AwsAccountIds(clients);
    const a = account({ roleArn: ROLE_A, externalId: 'ext-a' });
    expect(await Promise.all([ids.get(a), ids.get(a)])).toEqual(['210987654321', '210987654321']);
    expect(await ids.get({ ...a })).toBe('210987654321');
    expect(aws.callsTo('GetCallerIdentity')).toHaveLength(1);
    // Signed with the role's credentials, through the account's endpoint.
    expect(aws.sts.credentialsFor(aws.callsTo('GetCallerIdentity')[0]?.accessKeyId)?.roleArn).toBe(ROLE_A);

    expect(await ids.get(account({ roleArn: ROLE_B, externalId: 'ext-a' }))).toBe('111122223333');
    expect(aws.callsTo('GetCallerIdentity')).toHaveLength(2);
    expect(await ids.get(account())).toBe(FAKE_ACCOUNT_ID);
    expect(aws.callsTo('GetCallerIdentity')).toHaveLength(3);
  });

  it('does not keep a failure', async () => {
    const ids = new AwsAccountIds(clients);
    aws.failNext('GetCallerIdentity', { code: 'AccessDenied', status: 403 });
    await expect(ids.get(account())).rejects.toMatchObject({ name: 'AccessDenied' });
    expect(await ids.get(account())).toBe(FAKE_ACCOUNT_ID);
    expect(aws.callsTo('GetCallerIdentity')).toHaveLength(2);
  });

  it("ends one caller's wait on its abort while the shared request still serves the others", async () => {
    const ids = new AwsAccountIds(clients);
    aws.delay('GetCallerIdentity', 200, { times: 1 });
    const controller = new AbortController();
    const first = ids.get(account(), controller.signal);
    const second = ids.get(account());
    controller.abort(new Error('gone'));
    await expect(first).rejects.toThrow('gone');
    expect(await second).toBe(FAKE_ACCOUNT_ID);
    expect(await ids.get(account())).toBe(FAKE_ACCOUNT_ID);
    expect(aws.callsTo('GetCallerIdentity')).toHaveLength(1);
  });

  it('is bounded by the call time limit', async () => {
    const ids = new AwsAccountIds({ sts: (a) => clients.sts(a), callTimeoutMs: 200 });
    aws.failNext('GetCallerIdentity', { hang: true });
    const started = Date.now();
    await expect(ids.get(account())).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
