// POST /cloud/logs/logs-insights/histogram on `aws` sources, black-box over HTTP against the fake CloudWatch Logs
// endpoint, which runs the queries Berth sends (test/support/fake-aws/insights-query.ts): one Insights query
// per unit of ≤ 50 log groups, held to the account's Insights quota, every row counted under UNKNOWN.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { AwsQuotaStore } from '../../src/store/aws-quotas.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { AwsError, FAKE_ACCOUNT_ID, FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { exactQueryHandler } from '../support/fake-aws/insights-query.js';
import { logSource } from '../support/log-source.js';
import {
  expectLogsInsightsOk,
  LOGS_INSIGHTS_PATH,
  type LogsInsightsResult,
  type LogsInsightsRow,
} from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const PATH = '/cloud/logs/logs-insights/histogram';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const START = T0 - 600_000;
const END = T0 + 600_000;
const MAX_CONCURRENT = 3;
const LEVELS_REASON =
  'levels: CloudWatch Logs Insights cannot derive the levels Berth derives from the message: its rows are counted under UNKNOWN';

interface Bucket {
  startMs: number;
  endMs: number;
  counts: Record<string, number>;
}
interface Histogram {
  buckets: Bucket[];
  partial: boolean;
  missedSources: string[];
  unsupported: string[];
}

let aws: FakeAws;
let t: TestApp;

function fixture(endpoint: string): Record<string, unknown> {
  const account = (id: string, organizationId = ORG_A) => ({
    id,
    organizationId,
    provider: 'aws',
    region: 'us-east-1',
    endpoint,
  });
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      account('acc-aws'),
      account('acc-aws2'),
      account('acc-b', ORG_B),
      { id: 'acc-local', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
    ],
    projects: [
      { id: 'proj-a', organizationId: ORG_A, name: 'A' },
      { id: 'proj-b', organizationId: ORG_B, name: 'B' },
    ],
    environments: [
      { id: 'env-mixed', projectId: 'proj-a', name: 'mixed' },
      { id: 'env-many', projectId: 'proj-a', name: 'many' },
      { id: 'env-b', projectId: 'proj-b', name: 'b' },
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
        logSources: Array.from({ length: 120 }, (_, i) => logSource(`g${i}`, 'acc-aws', `/many/g${i}`)),
      },
      { id: 'mi-b', environmentId: 'env-b', name: 'b', logSources: [logSource('app', 'acc-b', '/b/app')] },
    ],
    deploymentResources: [
      {
        id: 'dr-task',
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

const put = (group: string, stream: string, offset: number, message: string) =>
  aws.logs.putLogEvents(group, stream, [{ timestamp: T0 + offset, message }]);

beforeAll(async () => {
  // Row queries run exactly too (their filters and stream restrictions), so the query's rows are what Insights'd be.
  aws = await startFakeAws({ logs: { queryPollsBeforeFinal: 1, queryHandler: exactQueryHandler } });
  const levels = ['INFO', 'ERROR', 'DEBUG', 'WARN', '{"level":"error","msg":"json"}'];
  for (let i = 0; i < 200; i++)
    put('/aws/app', i % 3 === 0 ? 'app/2' : 'app/1', -590_000 + i * 5_923, `${levels[i % 5]} aws app ${i}`);
  put('/aws/app', 'app/1', -600_000, 'INFO first millisecond');
  put('/aws/app', 'app/1', 600_000, 'INFO last millisecond');
  put('/aws/app', 'app/1', -600_001, 'INFO before the window');
  put('/aws/app', 'app/1', 600_001, 'INFO after the window');
  put('/aws/jobs', 'job/1', 1500, 'INFO job ran');
  put('/aws/jobs', 'job/1', 1700, 'ERROR disk quota exceeded');
  put('/aws/jobs', 'other/1', 1600, 'ERROR disk on another stream');
  put('/aws/broken', 'b/1', 1000, 'INFO broken source line');
  put('/aws/ecs', 'ecs/web/feedface', 1000, 'INFO web container');
  put('/aws/ecs', 'ecs/web/deadbeef', 1200, 'INFO another task');
  put('/b/app', 'b/1', 1000, 'INFO org b secret');
  for (let i = 0; i < 120; i++) put(`/many/g${i}`, 'm/1', 3000 + i * 10, `INFO many ${i}`);

  t = await startTestApp({
    fixture: fixture(aws.endpoint),
    config: {
      INSIGHTS_POLL_INTERVAL_MS: 10,
      INSIGHTS_MAX_CONCURRENT_QUERIES: MAX_CONCURRENT,
      LOG_QUERY_CONCURRENCY: 8,
      // Long enough for a fake Insights query on a loaded CI machine (3 s once ran out there); the quota test waits it out.
      LOG_QUERY_SOURCE_TIMEOUT_MS: 8_000,
    },
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(2, 5) } },
      }),
  });
});
afterAll(async () => {
  await t?.close();
  await aws?.close();
});
beforeEach(() => {
  aws.clearCalls();
  aws.clearFaults();
  aws.intercept('StartQuery', undefined);
  aws.logs.options.queryPollsBeforeFinal = 1;
});

type Body = Record<string, unknown>;
const histogram = (body: Body, token: string = TOKENS.viewer): Promise<TestResponse<Histogram>> =>
  t.request<Histogram>('POST', PATH, { token, body: { startTime: START, endTime: END, ...body } });
const query = (body: Body, token: string = TOKENS.viewer): Promise<TestResponse<LogsInsightsResult>> =>
  t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
    token,
    body: { startTime: START, endTime: END, complete: true, ...body },
  });

function ok(res: TestResponse<Histogram>): Histogram {
  expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({
    status: 200,
    body: undefined,
  });
  return res.body;
}

/** Buckets of the documented layout, each row counted under `levelOf(row)`. */
function expectedBuckets(
  rows: LogsInsightsRow[],
  buckets: number,
  levelOf: (row: LogsInsightsRow) => string = () => 'UNKNOWN',
): Bucket[] {
  const width = Math.ceil((END - START + 1) / buckets);
  const out: Bucket[] = Array.from({ length: Math.ceil((END - START + 1) / width) }, (_, i) => ({
    startMs: START + i * width,
    endMs: Math.min(END, START + (i + 1) * width - 1),
    counts: {},
  }));
  for (const r of rows) {
    const b = out[Math.floor((r.timestamp - START) / width)]!;
    const level = levelOf(r);
    b.counts[level] = (b.counts[level] ?? 0) + 1;
  }
  return out;
}

const total = (h: Histogram) => h.buckets.reduce((n, b) => n + Object.values(b.counts).reduce((m, c) => m + c, 0), 0);
const histogramQueries = () =>
  aws.callsTo('StartQuery').filter((c) => c.status === 200 && String(c.input.queryString).includes('| stats '));

describe('the query StartQuery receives', () => {
  it('scopes streams and the millisecond window, pushes the filter, and counts per start-aligned bucket', async () => {
    const startTime = T0 + 123;
    const endTime = T0 + 60_456;
    ok(
      await histogram({
        logSourceKeys: ['mi-aws::jobs'],
        startTime,
        endTime,
        buckets: 10,
        filter: { kind: 'text', op: 'contains', value: 'disk', caseSensitive: true },
      }),
    );
    const calls = histogramQueries();
    expect(calls).toHaveLength(1);
    const width = Math.ceil((endTime - startTime + 1) / 10);
    expect(calls[0]!.input).toMatchObject({
      logGroupNames: ['/aws/jobs'],
      startTime: Math.floor(startTime / 1000),
      endTime: Math.ceil(endTime / 1000),
      limit: 10,
    });
    expect(calls[0]!.input.queryString).toBe(
      [
        'filter (@log like /(^|:)\\/aws\\/jobs$/ and (@logStream like /^job\\//))',
        `filter toMillis(@timestamp) >= ${startTime} and toMillis(@timestamp) <= ${endTime}`,
        'filter @message like "disk"',
        `fields floor((toMillis(@timestamp) - ${startTime}) / ${width}) as b`,
        'stats count(*) as n by b',
      ].join('\n| '),
    );
  });
});

describe('counts', () => {
  it('counts the rows the query returns per bucket, all under UNKNOWN, and says why', async () => {
    for (const buckets of [1, 7, 60, 200]) {
      const q = expectLogsInsightsOk(await query({ moduleInstanceIds: ['mi-aws'] }));
      expect(q.rows.length).toBe(200 + 2 + 2);
      const h = ok(await histogram({ moduleInstanceIds: ['mi-aws'], buckets }));
      expect(h).toEqual({
        buckets: expectedBuckets(q.rows, buckets),
        partial: false,
        missedSources: [],
        unsupported: [LEVELS_REASON],
      });
    }
    // One stats query per request (one unit: two groups of one account).
    expect(histogramQueries()).toHaveLength(4);
  });

  it('a pushed text filter counts exactly the rows the query keeps', async () => {
    for (const filter of [
      { kind: 'text', op: 'contains', value: 'ERROR', caseSensitive: true },
      { kind: 'text', op: 'contains', value: 'error' },
      { kind: 'not', node: { kind: 'text', op: 'startsWith', value: 'info' } },
      { kind: 'stream', op: 'equals', value: 'app/2' },
    ]) {
      const q = expectLogsInsightsOk(await query({ moduleInstanceIds: ['mi-aws'], filter }));
      expect(q.rows.length).toBeGreaterThan(0);
      const h = ok(await histogram({ moduleInstanceIds: ['mi-aws'], filter }));
      expect(h.buckets, JSON.stringify(filter)).toEqual(expectedBuckets(q.rows, 60));
      expect(h.unsupported).toEqual([LEVELS_REASON]);
    }
  });

  it('drops a level predicate soundly, naming its path: the counts of the rest of the filter', async () => {
    const disk = { kind: 'text', op: 'contains', value: 'disk', caseSensitive: true };
    const filter = { kind: 'and', nodes: [disk, { kind: 'level', levels: ['INFO'] }] };
    const h = ok(await histogram({ moduleInstanceIds: ['mi-aws'], filter }));
    expect(h.unsupported).toEqual([
      'filter.nodes[1]: a level predicate is not supported by CloudWatch Logs Insights in a histogram; the counts include rows it would exclude',
      LEVELS_REASON,
    ]);
    const superset = expectLogsInsightsOk(await query({ moduleInstanceIds: ['mi-aws'], filter: disk }));
    expect(superset.rows).toHaveLength(1);
    expect(expectLogsInsightsOk(await query({ moduleInstanceIds: ['mi-aws'], filter })).rows).toHaveLength(0);
    expect(h.buckets).toEqual(expectedBuckets(superset.rows, 60));
    // Under a not the dropped predicate leaves nothing out: not(level) counts every row.
    const negated = ok(
      await histogram({
        moduleInstanceIds: ['mi-aws'],
        filter: { kind: 'not', node: { kind: 'level', levels: ['INFO'] } },
      }),
    );
    expect(total(negated)).toBe(204);
  });

  it('mixes a local source (levels counted exactly) with aws ones (UNKNOWN)', async () => {
    const body = {
      environmentId: 'env-mixed',
      filter: { kind: 'not', node: { kind: 'stream', op: 'prefix', value: 'app/' } },
    };
    const q = expectLogsInsightsOk(await query(body));
    const h = ok(await histogram(body));
    expect(h.buckets).toEqual(expectedBuckets(q.rows, 60, (r) => (r.sourceId === 'mi-local' ? r.level : 'UNKNOWN')));
    expect(total(h)).toBe(2 + 1 + 2);
    expect(h.unsupported).toEqual([LEVELS_REASON]);
  });

  it('a deployment resource counts its exact streams', async () => {
    const h = ok(await histogram({ deploymentResourceId: 'dr-task' }));
    expect(total(h)).toBe(1);
  });
});

describe('units, quota and failures', () => {
  it('sends one query per 50 log groups at most, and adds them up', async () => {
    const h = ok(await histogram({ environmentId: 'env-many' }));
    expect(total(h)).toBe(120);
    const calls = histogramQueries();
    expect(calls.map((c) => (c.input.logGroupNames as string[]).length).sort()).toEqual([20, 50, 50]);
  });

  it("waits for a slot of the account's Insights quota, held across the cluster in the database", async () => {
    const key = `logs-insights:${FAKE_ACCOUNT_ID}/us-east-1`;
    const quotas = new AwsQuotaStore(t.store.db);
    // Another replica holds every slot of the AWS account: no query is started, and the source runs out of time.
    const held = [];
    for (let i = 0; i < MAX_CONCURRENT; i++) held.push((await quotas.tryAcquireSlot(key, MAX_CONCURRENT, 30_000))!);
    try {
      const h = ok(await histogram({ moduleInstanceIds: ['mi-aws'] }));
      expect(h).toMatchObject({ partial: true, missedSources: ['/aws/app', '/aws/jobs'] });
      expect(histogramQueries()).toHaveLength(0);
    } finally {
      for (const lease of held) await lease.release();
    }
    const h = ok(await histogram({ moduleInstanceIds: ['mi-aws'] }));
    expect(h.partial).toBe(false);
    expect(histogramQueries()).toHaveLength(1);
    // The slot was given back.
    expect(await quotas.count(key)).toBe(0);
  });

  it('a failed query misses its unit: partial, missedSources, the other sources counted', async () => {
    aws.intercept('StartQuery', (input) => {
      if ((input.logGroupNames as string[]).includes('/aws/broken'))
        throw new AwsError('AccessDeniedException', 'User is not authorized');
      return undefined;
    });
    const h = ok(await histogram({ environmentId: 'env-mixed' }));
    expect(h).toMatchObject({ partial: true, missedSources: ['/aws/broken'] });
    expect(total(h)).toBe(202 + 2 + 2);
  });

  it('a query ending Failed misses its unit', async () => {
    aws.logs.options.queryFinalStatus = 'Failed';
    try {
      const h = ok(await histogram({ logSourceKeys: ['mi-broken::broken', 'mi-local::app'] }));
      expect(h).toMatchObject({ partial: true, missedSources: ['/aws/broken'] });
      expect(total(h)).toBe(2);
    } finally {
      aws.logs.options.queryFinalStatus = 'Complete';
    }
  });
});

describe('tenancy', () => {
  it("answers another organization's sources like missing ones, as the query does", async () => {
    const h: TestResponse = await histogram({ environmentId: 'env-b' });
    expectError(h, 404, 'logs:environment:not-found');
    const q: TestResponse = await query({ environmentId: 'env-b' });
    expect([h.status, h.body.code, h.body.message]).toEqual([q.status, q.body.code, q.body.message]);
    expect(total(ok(await histogram({ environmentId: 'env-b' }, TOKENS.otherAdmin)))).toBe(1);
  });
});
