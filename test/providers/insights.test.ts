import { storeTenancy } from '../../src/store/tenancy.js';
// The `aws` log backend (CloudWatch Logs Insights) through the real SDK, against the fake CloudWatch
// Logs endpoint: query text, StartQuery bounds, polling, failures, throttling, batching by 50 groups,
// bounded concurrency, StopQuery on timeout; and partial results over HTTP next to a local account.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/core/caller.js';
import { LogQueryService } from '../../src/services/log-query/service.js';
import { buildInsightsQuery, parseInsightsTimestamp } from '../../src/providers/aws/log-query/backend.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import {
  AwsError,
  FAKE_ACCOUNT_ID,
  formatInsightsTimestamp,
  insightsPtr,
  startFakeAws,
  type FakeAws,
  type FinalQueryStatus,
  type QueryHandler,
  type StoredLogEvent,
} from '../support/fake-aws/index.js';
import { logSource } from '../support/log-source.js';
import {
  expectLogsInsightsOk,
  LOGS_INSIGHTS_PATH as PATH,
  type LogsInsightsResult as Result,
  type LogsInsightsRow as Row,
} from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const START = '2024-01-15T11:00:00Z';
const END = '2024-01-15T13:00:00Z';
const MAX_CONCURRENT = 3;

// ---------------------------------------------------------------------------------------------
// A query handler that reads back what Berth writes: the millisecond window and the per-group
// stream restrictions of the query text. The filter command is not interpreted: the rows are a
// superset of what real Insights would answer, and Berth applies the whole filter in process too.

const unescapeRegex = (s: string) => s.replace(/\\(.)/g, '$1');

function streamRestrictions(queryString: string): Map<string, (stream: string) => boolean> | undefined {
  const line = queryString.split('\n| ').find((l) => l.startsWith('filter (@log like '));
  if (line === undefined) return undefined;
  const out = new Map<string, (stream: string) => boolean>();
  const groupClause = /\(@log like \/\(\^\|:\)((?:\\.|[^\\/])*)\$\/(?: and \(((?:"(?:\\.|[^"\\])*"|[^()"])*)\))?\)/g;
  for (const m of line.matchAll(groupClause)) {
    const group = unescapeRegex(m[1]!);
    const clause = m[2];
    if (clause === undefined) {
      out.set(group, () => true);
      continue;
    }
    const prefixes = [...clause.matchAll(/@logStream like \/\^((?:\\.|[^\\/])*)\//g)].map((x) => unescapeRegex(x[1]!));
    const names = [...clause.matchAll(/@logStream in \[((?:"(?:\\.|[^"\\])*"(?:, )?)*)\]/g)].flatMap(
      (x) => JSON.parse(`[${x[1]}]`) as string[],
    );
    out.set(group, (stream) => prefixes.some((p) => stream.startsWith(p)) || names.includes(stream));
  }
  return out;
}

function windowOf(queryString: string): [number, number] {
  const m = /filter toMillis\(@timestamp\) >= (\d+) and toMillis\(@timestamp\) <= (\d+)/.exec(queryString);
  if (!m) throw new AwsError('MalformedQueryException', 'no millisecond window in the query');
  return [Number(m[1]), Number(m[2])];
}

interface Behaviour {
  status?: FinalQueryStatus;
  pollsBeforeFinal?: number;
  /** Replace the @timestamp of the first row by something that is no time. */
  garbleFirstTimestamp?: string;
}
const behaviour = new Map<string, Behaviour>();
let maxRunning = 0;

const handler: QueryHandler = (q, ctx) => {
  const running = fake.logs.runningQueries().length + 1;
  maxRunning = Math.max(maxRunning, running);
  const [lo, hi] = windowOf(q.queryString);
  const restrictions = streamRestrictions(q.queryString);
  const events = ctx
    .eventsInWindow()
    .filter(
      (e) =>
        e.timestamp >= lo &&
        e.timestamp <= hi &&
        (restrictions === undefined || (restrictions.get(e.logGroupName)?.(e.logStreamName) ?? false)),
    );
  const { garbleFirstTimestamp, ...b } =
    q.logGroupNames.map((g) => behaviour.get(g)).find((x) => x !== undefined) ?? {};
  const rows = events.slice(0, q.limit ?? 10_000).map((e) => ctx.toRow(e));
  if (garbleFirstTimestamp !== undefined && rows[0] !== undefined) {
    rows[0] = rows[0].map((f) => (f.field === '@timestamp' ? { ...f, value: garbleFirstTimestamp } : f));
  }
  return { rows, recordsMatched: events.length, ...b };
};

// ---------------------------------------------------------------------------------------------

let fake: FakeAws;
let t: TestApp;
const savedEnv: Record<string, string | undefined> = {};
const ENV = {
  AWS_ACCESS_KEY_ID: 'AKIAFAKEFAKEFAKEFAKE',
  AWS_SECRET_ACCESS_KEY: 'fake-secret-access-key',
  AWS_EC2_METADATA_DISABLED: 'true',
};

const stored = new Map<string, StoredLogEvent>();
function put(group: string, stream: string, offset: number, message: string) {
  for (const e of fake.logs.putLogEvents(group, stream, [{ timestamp: T0 + offset, message }]))
    stored.set(e.message, e);
}

const APP_LEVELS = ['INFO', 'INFO', 'ERROR', 'DEBUG', 'INFO', 'WARN', 'INFO', 'ERROR'];

function fixture(endpoint: string): Record<string, unknown> {
  const aws = (id: string) => ({ id, organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint });
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      aws('acc-aws'),
      aws('acc-aws2'),
      aws('acc-aws3'),
      { id: 'acc-local', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
    ],
    projects: [{ id: 'proj-a', organizationId: ORG_A, name: 'A' }],
    environments: [
      { id: 'env-mixed', projectId: 'proj-a', name: 'mixed' },
      { id: 'env-many', projectId: 'proj-a', name: 'many' },
      { id: 'env-slow', projectId: 'proj-a', name: 'slow' },
    ],
    moduleInstances: [
      {
        id: 'mi-aws',
        environmentId: 'env-mixed',
        name: 'aws',
        logSources: [
          logSource('app', 'acc-aws', '/aws/app'),
          logSource('jobs', 'acc-aws', '/aws/jobs', { logStreamPrefix: 'job/' }),
        ],
      },
      {
        id: 'mi-broken',
        environmentId: 'env-mixed',
        name: 'broken',
        logSources: [logSource('broken', 'acc-aws2', '/aws/broken')],
      },
      {
        id: 'mi-local',
        environmentId: 'env-mixed',
        name: 'local',
        logSources: [logSource('app', 'acc-local', '/local/app')],
      },
      {
        id: 'mi-many',
        environmentId: 'env-many',
        name: 'many',
        logSources: Array.from({ length: 120 }, (_, i) =>
          logSource(`g${String(i).padStart(3, '0')}`, 'acc-aws', `/many/g${String(i).padStart(3, '0')}`),
        ),
      },
      {
        id: 'mi-slow',
        environmentId: 'env-slow',
        name: 'slow',
        logSources: [logSource('slow', 'acc-aws3', '/aws/slow')],
      },
    ],
    deploymentResources: [
      {
        id: 'dr-aws-vm-new',
        moduleInstanceId: 'mi-aws',
        type: 'ec2-instance',
        cloudAccountId: 'acc-aws',
        region: 'us-east-1',
        snapshot: { instanceId: 'i-1', logGroup: '/aws/deploys', releases: [] },
      },
      {
        id: 'dr-aws-task',
        moduleInstanceId: 'mi-aws',
        type: 'ecs-task',
        cloudAccountId: 'acc-aws',
        region: 'us-east-1',
        snapshot: {
          taskArn: 'arn:aws:ecs:us-east-1:123456789012:task/c/feedface',
          containerDefinitions: [
            {
              name: 'web',
              logConfiguration: {
                logDriver: 'awslogs',
                options: { 'awslogs-group': '/aws/ecs', 'awslogs-stream-prefix': 'ecs' },
              },
            },
            {
              name: 'proxy',
              logConfiguration: {
                logDriver: 'awslogs',
                options: { 'awslogs-group': '/aws/ecs', 'awslogs-stream-prefix': 'ecs' },
              },
            },
          ],
        },
      },
    ],
    logEvents: [
      {
        cloudAccountId: 'acc-local',
        region: 'us-east-1',
        logGroup: '/local/app',
        logStream: 'l/1',
        timestamp: T0 + 1200,
        message: 'INFO local line',
      },
      {
        cloudAccountId: 'acc-local',
        region: 'us-east-1',
        logGroup: '/local/app',
        logStream: 'l/1',
        timestamp: T0 + 2200,
        message: 'ERROR local failure',
      },
    ],
  });
}

beforeAll(async () => {
  for (const [k, v] of Object.entries(ENV)) {
    savedEnv[k] = process.env[k];
    process.env[k] = v;
  }
  fake = await startFakeAws({ logs: { queryHandler: handler, queryPollsBeforeFinal: 1 } });
  // /aws/app: 40 rows, several sharing a millisecond, levels cycling; /aws/jobs: a prefix source.
  for (let i = 0; i < 40; i++)
    put(
      '/aws/app',
      i % 3 === 0 ? 'app/2' : 'app/1',
      1000 + Math.floor(i / 4) * 100,
      `${APP_LEVELS[i % APP_LEVELS.length]} aws app ${i}`,
    );
  put('/aws/jobs', 'job/1', 1500, 'INFO job ran');
  put('/aws/jobs', 'job/1', 1700, 'ERROR disk quota exceeded');
  put('/aws/jobs', 'job/1', 1800, 'INFO disk fine');
  put('/aws/jobs', 'other/1', 1600, 'ERROR disk on another stream');
  put('/aws/broken', 'b/1', 1000, 'INFO broken source line');
  put('/aws/slow', 's/1', 1000, 'INFO slow source line');
  put('/aws/ecs', 'ecs/web/feedface', 1000, 'INFO web container');
  put('/aws/ecs', 'ecs/proxy/feedface', 1100, 'INFO proxy container');
  put('/aws/ecs', 'ecs/web/deadbeef', 1200, 'INFO another task');
  for (let i = 0; i < 120; i++) put(`/many/g${String(i).padStart(3, '0')}`, 'm/1', 3000 + i * 10, `INFO many ${i}`);

  t = await startTestApp({
    fixture: fixture(fake.endpoint),
    config: {
      INSIGHTS_POLL_INTERVAL_MS: 10,
      INSIGHTS_MAX_CONCURRENT_QUERIES: MAX_CONCURRENT,
      LOG_QUERY_CONCURRENCY: 8,
    },
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { retryStrategy: new ConfiguredRetryStrategy(4, 5) } },
      }),
  });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

beforeEach(() => {
  fake.clearCalls();
  fake.clearFaults();
  fake.intercept('StartQuery', undefined);
  behaviour.clear();
  maxRunning = 0;
  fake.logs.options.queryPollsBeforeFinal = 1;
});

const query = (body: Record<string, unknown>): Promise<TestResponse<Result>> =>
  t.request<Result>('POST', PATH, { token: TOKENS.viewer, body: { startTime: START, endTime: END, ...body } });

const ok = expectLogsInsightsOk;

const startQueries = () => fake.callsTo('StartQuery').filter((c) => c.status === 200);
const appEvents = () => [...stored.values()].filter((e) => e.logGroupName === '/aws/app');
const levelOf = (message: string) => message.split(' ')[0]!;

describe('the query StartQuery receives', () => {
  it('restricts streams, bounds the window in milliseconds, compiles the filter, sorts and limits', async () => {
    const startMs = T0 + 123;
    const endMs = T0 + 60_456;
    const result = ok(
      await query({
        logSourceKeys: ['mi-aws::jobs'],
        startTime: startMs,
        endTime: new Date(endMs).toISOString(),
        limit: 10,
        filter: {
          kind: 'and',
          nodes: [
            { kind: 'text', op: 'contains', value: 'disk', caseSensitive: true },
            { kind: 'level', levels: ['ERROR'] },
          ],
        },
      }),
    );
    const calls = startQueries();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.input).toMatchObject({
      logGroupNames: ['/aws/jobs'],
      startTime: Math.floor(startMs / 1000),
      endTime: Math.ceil(endMs / 1000),
      limit: 11,
    });
    expect(calls[0]!.input.queryString).toBe(
      [
        'fields @timestamp, @message, @logStream, @log, @ptr',
        'filter (@log like /(^|:)\\/aws\\/jobs$/ and (@logStream like /^job\\//))',
        `filter toMillis(@timestamp) >= ${startMs} and toMillis(@timestamp) <= ${endMs}`,
        'filter @message like "disk"',
        'sort @timestamp desc',
        'limit 11',
      ].join('\n| '),
    );
    // The level is applied in process; the other stream is not in the source.
    expect(result.rows.map((r) => r.message)).toEqual(['ERROR disk quota exceeded']);
    expect(result).toMatchObject({ partial: false, missedSources: [], unsupported: [], nextEndTimeMs: 0 });
  });

  it('has no restriction line when every source reads whole groups, and no filter line without a filter', async () => {
    ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    const q = startQueries()[0]!.input;
    expect(q.queryString).toBe(
      [
        'fields @timestamp, @message, @logStream, @log, @ptr',
        `filter toMillis(@timestamp) >= ${Date.parse(START)} and toMillis(@timestamp) <= ${Date.parse(END)}`,
        'sort @timestamp desc',
        'limit 1001',
      ].join('\n| '),
    );
    expect(q).toMatchObject({
      logGroupNames: ['/aws/app'],
      startTime: Date.parse(START) / 1000,
      endTime: Date.parse(END) / 1000,
      limit: 1001,
    });
  });

  it('names every group of a unit when one of them is restricted', async () => {
    const result = ok(await query({ moduleInstanceIds: ['mi-aws'] }));
    const q = startQueries()[0]!.input;
    expect((q.logGroupNames as string[]).sort()).toEqual(['/aws/app', '/aws/jobs']);
    expect(q.queryString).toContain(
      'filter (@log like /(^|:)\\/aws\\/app$/) or (@log like /(^|:)\\/aws\\/jobs$/ and (@logStream like /^job\\//))',
    );
    expect(result.rows).toHaveLength(40 + 3);
    expect(result.rows.some((r) => r.logStream === 'other/1')).toBe(false);
  });

  it('names the exact awslogs streams of a task', async () => {
    const result = ok(await query({ deploymentResourceId: 'dr-aws-task' }));
    const q = startQueries()[0]!.input;
    expect(q.logGroupNames).toEqual(['/aws/ecs']);
    expect(q.queryString).toContain(
      'filter (@log like /(^|:)\\/aws\\/ecs$/ and (@logStream in ["ecs/web/feedface", "ecs/proxy/feedface"]))',
    );
    expect(result.rows.map((r) => [r.message, r.sourceId, r.logSourceId])).toEqual([
      ['INFO proxy container', '', ''],
      ['INFO web container', '', ''],
    ]);
  });

  it('sends no query for an EC2 instance without a release (no stream can match)', async () => {
    const result = ok(await query({ deploymentResourceId: 'dr-aws-vm-new' }));
    expect(result).toMatchObject({ rows: [], partial: false, missedSources: [], nextEndTimeMs: 0 });
    expect(fake.callsTo('StartQuery')).toHaveLength(0);
  });

  it('uses a 10,000-row limit with complete', async () => {
    ok(await query({ logSourceKeys: ['mi-aws::app'], complete: true }));
    expect(startQueries()[0]!.input).toMatchObject({ limit: 10_000 });
    expect(startQueries()[0]!.input.queryString).toMatch(/\| limit 10000$/);
  });

  it('escapes group names and prefixes in the query text', () => {
    const account = {
      id: 'a',
      organizationId: 'o',
      provider: 'aws' as const,
      region: 'r',
      roleArn: null,
      externalId: null,
      endpoint: null,
    };
    const text = buildInsightsQuery(
      [
        {
          account,
          region: 'r',
          logGroup: '/a.b/(c)',
          streams: { kind: 'prefix', prefix: 'x/[1]+' },
          sourceId: 's',
          logSourceId: 'l',
        },
        {
          account,
          region: 'r',
          logGroup: '/q',
          streams: { kind: 'names', names: ['say "hi"', 'back\\slash'] },
          sourceId: 's',
          logSourceId: 'm',
        },
      ],
      { startMs: 1, endMs: 2 },
      '',
      5,
    );
    expect(text).toContain('(@log like /(^|:)\\/a\\.b\\/\\(c\\)$/ and (@logStream like /^x\\/\\[1\\]\\+/))');
    expect(text).toContain('(@log like /(^|:)\\/q$/ and (@logStream in ["say \\"hi\\"", "back\\\\slash"]))');
  });
});

describe('results', () => {
  it('maps Insights rows: epoch ms, derived level, stream, source, @ptr as eventId', async () => {
    const result = ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    expect(result.rows).toHaveLength(40);
    for (const row of result.rows) {
      const e = stored.get(row.message)!;
      expect(row).toEqual({
        timestamp: e.timestamp,
        level: levelOf(e.message),
        message: e.message,
        logStream: e.logStreamName,
        sourceId: 'mi-aws',
        logSourceId: 'app',
        eventId: insightsPtr(e),
      });
    }
  });

  it('parses the @timestamp format of Insights', () => {
    expect(parseInsightsTimestamp(formatInsightsTimestamp(T0 + 7))).toBe(T0 + 7);
    expect(parseInsightsTimestamp('2024-01-15 12:00:00.5')).toBe(T0 + 500);
    expect(parseInsightsTimestamp('2024-01-15 12:00:00')).toBe(T0);
    expect(parseInsightsTimestamp('garbage')).toBeNaN();
  });

  it('polls GetQueryResults until the query is Complete', async () => {
    behaviour.set('/aws/app', { pollsBeforeFinal: 4 });
    const result = ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    expect(result.rows).toHaveLength(40);
    const queryId = startQueries()[0]!;
    const id = fake.logs.queries().find((q) => q.createdAt >= queryId.at && q.logGroupNames[0] === '/aws/app')!.queryId;
    expect(fake.callsTo('GetQueryResults').filter((c) => c.input.queryId === id)).toHaveLength(5);
    expect(fake.logs.query(id)!.status).toBe('Complete');
    expect(fake.callsTo('StopQuery')).toHaveLength(0);
  });

  it('pages through a source with the level applied in process: short pages are not the end', async () => {
    const errors = appEvents().filter((e) => levelOf(e.message) === 'ERROR');
    expect(errors.length).toBeGreaterThan(5);
    for (const [limit, filter] of [
      [2, { kind: 'level', levels: ['ERROR'] }],
      [3, undefined],
    ] as const) {
      const seen: Row[] = [];
      let endTime: string | number = END;
      for (let page = 0; ; page++) {
        expect(page).toBeLessThan(100);
        const result = ok(
          await query({ logSourceKeys: ['mi-aws::app'], limit, endTime, ...(filter ? { filter } : {}) }),
        );
        seen.push(...result.rows);
        if (result.nextEndTimeMs === 0) break;
        endTime = result.nextEndTimeMs;
      }
      const expected = filter ? errors : appEvents();
      expect(seen.map((r) => r.eventId).sort()).toEqual(expected.map(insightsPtr).sort());
    }
  });
});

describe('failures', () => {
  it.each<FinalQueryStatus>(['Failed', 'Timeout', 'Cancelled'])(
    'a query ending %s: its log groups are missed, partial is true, the other sources answer',
    async (status) => {
      behaviour.set('/aws/broken', { status });
      const result = ok(await query({ environmentId: 'env-mixed' }));
      expect(result.partial).toBe(true);
      expect(result.missedSources).toEqual(['/aws/broken']);
      const messages = result.rows.map((r) => r.message);
      expect(messages).toContain('INFO local line');
      expect(messages).toContain('ERROR local failure');
      expect(messages).toContain('ERROR disk quota exceeded');
      expect(messages.filter((m) => m.includes('aws app'))).toHaveLength(40);
      expect(messages).not.toContain('INFO broken source line');
      // A query that ended is not stopped.
      expect(fake.callsTo('StopQuery')).toHaveLength(0);
    },
  );

  it('an error from StartQuery (access denied, missing group) misses the unit, not the request', async () => {
    fake.intercept('StartQuery', (input) => {
      if ((input.logGroupNames as string[]).includes('/aws/broken'))
        throw new AwsError('AccessDeniedException', 'User is not authorized');
      return undefined;
    });
    const denied = ok(await query({ environmentId: 'env-mixed' }));
    expect(denied).toMatchObject({ partial: true, missedSources: ['/aws/broken'] });
    expect(denied.rows.length).toBe(2 + 40 + 3);
    fake.intercept('StartQuery', undefined);

    fake.logs.deleteLogGroup('/aws/broken');
    try {
      const missing = ok(await query({ environmentId: 'env-mixed' }));
      expect(missing).toMatchObject({ partial: true, missedSources: ['/aws/broken'] });
    } finally {
      put('/aws/broken', 'b/1', 1000, 'INFO broken source line');
    }
  });

  it('a unit of one account failing misses every group of that unit', async () => {
    behaviour.set('/aws/jobs', { status: 'Failed' });
    const result = ok(await query({ environmentId: 'env-mixed' }));
    expect(result.partial).toBe(true);
    expect(result.missedSources.sort()).toEqual(['/aws/app', '/aws/jobs']);
    expect(result.rows.map((r) => r.message).sort()).toEqual([
      'ERROR local failure',
      'INFO broken source line',
      'INFO local line',
    ]);
  });

  it('retries a throttled StartQuery and GetQueryResults', async () => {
    fake.failNext('StartQuery', { code: 'ThrottlingException', times: 2 });
    fake.failNext('GetQueryResults', { code: 'ThrottlingException', times: 1 });
    const result = ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    expect(result).toMatchObject({ partial: false, missedSources: [] });
    expect(result.rows).toHaveLength(40);
    expect(fake.callsTo('StartQuery').map((c) => c.errorCode ?? 'ok')).toEqual([
      'ThrottlingException',
      'ThrottlingException',
      'ok',
    ]);
    expect(fake.callsTo('GetQueryResults')[0]!.errorCode).toBe('ThrottlingException');
  });

  it('retries LimitExceededException (the account query concurrency limit)', async () => {
    fake.failNext('StartQuery', { code: 'LimitExceededException', times: 1 });
    const result = ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    expect(result.partial).toBe(false);
    expect(fake.callsTo('StartQuery').map((c) => c.errorCode ?? 'ok')).toEqual(['LimitExceededException', 'ok']);
  });

  it('gives up after the retry budget: the unit is missed', async () => {
    fake.failNext('StartQuery', { code: 'ThrottlingException', times: 10 });
    const result = ok(await query({ logSourceKeys: ['mi-aws::app', 'mi-local::app'] }));
    expect(result).toMatchObject({ partial: true, missedSources: ['/aws/app'] });
    expect(result.rows.map((r) => r.message)).toEqual(['ERROR local failure', 'INFO local line']);
    expect(fake.callsTo('StartQuery')).toHaveLength(4);
  });

  it('sends StopQuery when the per-source timeout fires, and reports the source missed', async () => {
    behaviour.set('/aws/slow', { pollsBeforeFinal: 1_000_000 });
    const service = new LogQueryService(t.store.db, storeTenancy(t.store.db), t.services.logBackends.forProvider, {
      filters: t.services.filters,
      sourceTimeoutMs: 500,
      deadlineMs: 60_000,
      concurrency: 4,
    });
    const caller: Caller = {
      principalId: 'p-viewer',
      keyId: 'k-viewer',
      superadmin: false,
      keyOrganizationId: ORG_A,
      memberships: new Map([[ORG_A, 'viewer']]),
    };
    const started = Date.now();
    const result = await service.query(caller, {
      startTime: START,
      endTime: END,
      logSourceKeys: ['mi-slow::slow', 'mi-local::app'],
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result).toMatchObject({ partial: true, missedSources: ['/aws/slow'] });
    expect(result.rows.map((r) => r.message)).toEqual(['ERROR local failure', 'INFO local line']);
    const slow = fake.logs.queries().find((q) => q.logGroupNames[0] === '/aws/slow' && q.createdAt >= started)!;
    await vi.waitFor(() => expect(fake.callsTo('StopQuery').map((c) => c.input.queryId)).toEqual([slow.queryId]));
    expect(fake.logs.query(slow.queryId)!.status).toBe('Cancelled');
    expect(fake.callsTo('GetQueryResults').filter((c) => c.input.queryId === slow.queryId).length).toBeGreaterThan(1);
  });
});

describe('truthful answers (issue 8)', () => {
  const caller: Caller = {
    principalId: 'p-viewer',
    keyId: 'k-viewer',
    superadmin: false,
    keyOrganizationId: ORG_A,
    memberships: new Map([[ORG_A, 'viewer']]),
  };

  it('makes a source partial when Insights returns a row whose @timestamp cannot be read, and keeps its other rows', async () => {
    behaviour.set('/aws/app', { garbleFirstTimestamp: '15/01/2024 12:00' });
    const result = ok(await query({ logSourceKeys: ['mi-aws::app', 'mi-local::app'] }));
    expect(result).toMatchObject({ partial: true, missedSources: ['/aws/app'] });
    expect(result.rows.filter((r) => r.sourceId === 'mi-aws')).toHaveLength(39);
    expect(result.rows.filter((r) => r.sourceId === 'mi-local')).toHaveLength(2);
  });

  it('stops the Insights query (StopQuery) when the client goes away', async () => {
    behaviour.set('/aws/slow', { pollsBeforeFinal: 1_000_000 });
    const started = Date.now();
    const aborted = new AbortController();
    const pending = fetch(`${t.url}${PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.viewer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ startTime: START, endTime: END, logSourceKeys: ['mi-slow::slow'] }),
      signal: aborted.signal,
    }).catch(() => undefined);
    await vi.waitFor(() =>
      expect(fake.logs.queries().some((q) => q.logGroupNames[0] === '/aws/slow' && q.createdAt >= started)).toBe(true),
    );
    aborted.abort();
    await pending;
    const slow = fake.logs.queries().find((q) => q.logGroupNames[0] === '/aws/slow' && q.createdAt >= started)!;
    await vi.waitFor(() => expect(fake.callsTo('StopQuery').map((c) => c.input.queryId)).toEqual([slow.queryId]));
    // Well before the 20 s source timeout: the client leaving stopped it.
    expect(Date.now() - started).toBeLessThan(5_000);
    const polls = fake.callsTo('GetQueryResults').filter((c) => c.input.queryId === slow.queryId).length;
    await new Promise((r) => setTimeout(r, 200));
    expect(fake.callsTo('GetQueryResults').filter((c) => c.input.queryId === slow.queryId).length).toBe(polls);
  });

  it('answers partial at the request deadline, with the running query stopped', async () => {
    behaviour.set('/aws/slow', { pollsBeforeFinal: 1_000_000 });
    const service = new LogQueryService(t.store.db, storeTenancy(t.store.db), t.services.logBackends.forProvider, {
      filters: t.services.filters,
      sourceTimeoutMs: 60_000,
      deadlineMs: 400,
      concurrency: 4,
    });
    const started = Date.now();
    const result = await service.query(caller, {
      startTime: START,
      endTime: END,
      logSourceKeys: ['mi-slow::slow', 'mi-local::app'],
    });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(result).toMatchObject({ partial: true, missedSources: ['/aws/slow'] });
    expect(result.rows.map((r) => r.message)).toEqual(['ERROR local failure', 'INFO local line']);
    await vi.waitFor(() => expect(fake.callsTo('StopQuery')).toHaveLength(1));
  });

  it('stops every running query at shutdown (close)', async () => {
    behaviour.set('/aws/slow', { pollsBeforeFinal: 1_000_000 });
    const service = new LogQueryService(t.store.db, storeTenancy(t.store.db), t.services.logBackends.forProvider, {
      filters: t.services.filters,
      sourceTimeoutMs: 60_000,
      deadlineMs: 60_000,
      concurrency: 4,
    });
    const started = Date.now();
    const pending = service.query(caller, { startTime: START, endTime: END, logSourceKeys: ['mi-slow::slow'] });
    await vi.waitFor(() => expect(fake.logs.runningQueries().length).toBeGreaterThan(0));
    service.close();
    expect(await pending).toMatchObject({ partial: true, missedSources: ['/aws/slow'] });
    expect(Date.now() - started).toBeLessThan(5_000);
    await vi.waitFor(() => expect(fake.callsTo('StopQuery')).toHaveLength(1));
  });
});

describe('batching and concurrency', () => {
  it('splits more than 50 log groups into several StartQuery calls and merges their rows', async () => {
    const result = ok(await query({ environmentId: 'env-many' }));
    const calls = startQueries();
    expect(calls.map((c) => (c.input.logGroupNames as string[]).length).sort((a, b) => a - b)).toEqual([20, 50, 50]);
    const groups = calls.flatMap((c) => c.input.logGroupNames as string[]);
    expect(new Set(groups).size).toBe(120);
    expect(result.rows.map((r) => r.message)).toEqual(Array.from({ length: 120 }, (_, i) => `INFO many ${119 - i}`));
    expect(result.rows.map((r) => r.logSourceId)).toEqual(
      Array.from({ length: 120 }, (_, i) => `g${String(119 - i).padStart(3, '0')}`),
    );
    expect(result.partial).toBe(false);
  });

  it(`runs at most INSIGHTS_MAX_CONCURRENT_QUERIES (${MAX_CONCURRENT}) queries at once per account and region`, async () => {
    fake.logs.options.queryPollsBeforeFinal = 3;
    const results = await Promise.all(Array.from({ length: 4 }, () => query({ environmentId: 'env-many' })));
    for (const res of results) expect(ok(res).rows).toHaveLength(120);
    expect(startQueries()).toHaveLength(12);
    expect(fake.callsTo('StartQuery').every((c) => c.status === 200)).toBe(true);
    // Reached (queries overlap: each takes several polls) and never exceeded.
    expect(maxRunning).toBeLessThanOrEqual(MAX_CONCURRENT);
    expect(maxRunning).toBeGreaterThanOrEqual(2);
  });

  it('queries different accounts independently', async () => {
    fake.logs.options.queryPollsBeforeFinal = 2;
    const result = ok(await query({ environmentId: 'env-mixed' }));
    expect(result.partial).toBe(false);
    const accounts = new Set(startQueries().map((c) => (c.input.logGroupNames as string[]).join(',')));
    expect(accounts).toEqual(new Set(['/aws/app,/aws/jobs', '/aws/broken']));
  });
});

describe('errors', () => {
  it('keeps request validation in front of the providers', async () => {
    expectError(await query({ environmentId: 'env-mixed', limit: 0 }), 400);
    expect(fake.callsTo('StartQuery')).toHaveLength(0);
  });

  it('signs with the default credential chain, in the region of the source', async () => {
    ok(await query({ logSourceKeys: ['mi-aws::app'] }));
    expect(startQueries()[0]).toMatchObject({ accessKeyId: ENV.AWS_ACCESS_KEY_ID, region: 'us-east-1' });
    expect(FAKE_ACCOUNT_ID).toMatch(/^\d{12}$/);
  });
});
