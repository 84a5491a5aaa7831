// POST /cloud/logs/logs-insights/histogram, black-box over HTTP on the local provider: the counts per bucket and
// level are those of the rows the log query returns for the same body, with the query's rules and errors.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { FAKE_CREDENTIALS } from '../support/fake-aws/index.js';
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
const START = T0 - 3_600_000;
const END = T0 + 3_600_000;
const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'UNKNOWN'];

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

const ev = (cloudAccountId: string, logGroup: string, logStream: string, offset: number, message: string) => ({
  cloudAccountId,
  region: 'us-east-1',
  logGroup,
  logStream,
  timestamp: T0 + offset,
  message,
});

const MESSAGES = [
  '{"level":"info","msg":"request served","status":200}',
  '{"level":"error","msg":"db timeout","status":500}',
  '{"level":30,"msg":"pino info"}',
  'WARN disk 91% full',
  'DEBUG cache miss',
  'TRACE entering handler',
  '2024-01-15T12:00:02Z FATAL out of memory',
  'plain line without level',
  '[error] Connection refused',
  'INFO but an ERROR inside',
];

// Events spread over the two hours, in streams web/1 and web/2 of /h/web, worker/ and cron/ of /h/shared, /h/api.
const events = [
  ...Array.from({ length: 240 }, (_, i) =>
    ev('acc-a', '/h/web', i % 3 === 0 ? 'web/2' : 'web/1', -3_600_000 + i * 30_011, MESSAGES[i % MESSAGES.length]!),
  ),
  ...Array.from({ length: 40 }, (_, i) =>
    ev('acc-a', '/h/shared', i % 2 === 0 ? 'worker/1' : 'cron/1', -1_800_000 + i * 60_013, MESSAGES[(i * 3) % 10]!),
  ),
  ...Array.from({ length: 30 }, (_, i) => ev('acc-a', '/h/api', 'api/1', i * 1_000, MESSAGES[(i * 7) % 10]!)),
  // The window's edges, and just outside it.
  ev('acc-a', '/h/api', 'api/1', -3_600_000, 'ERROR first millisecond'),
  ev('acc-a', '/h/api', 'api/1', 3_600_000, 'ERROR last millisecond'),
  ev('acc-a', '/h/api', 'api/1', -3_600_001, 'ERROR before the window'),
  ev('acc-a', '/h/api', 'api/1', 3_600_001, 'ERROR after the window'),
  // Many rows in one millisecond.
  ...Array.from({ length: 25 }, (_, i) => ev('acc-a', '/h/api', 'api/2', 42, `INFO burst ${i}`)),
  // Deployment resources.
  ev('acc-a', '/ecs/web', 'ecs/web/0123456789abcdef', 1000, 'INFO web container up'),
  ev('acc-a', '/ecs/web', 'ecs/web/0123456789abcdef', 2000, 'ERROR web container failed'),
  ev('acc-a', '/ecs/web', 'ecs/web/fedcba9876543210', 1500, 'INFO another task'),
  // Org B: the same group name on its own account.
  ev('acc-b', '/h/web', 'web/1', 1000, 'ERROR org b secret'),
  ev('acc-b', '/h/web', 'web/1', 2000, 'INFO org b secret'),
];

function fixture(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      { id: 'acc-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
      // An aws account whose endpoint refuses every connection: its sources fail.
      {
        id: 'acc-dead',
        organizationId: ORG_A,
        provider: 'aws',
        region: 'us-east-1',
        endpoint: 'http://127.0.0.1:1',
      },
    ],
    projects: [
      { id: 'proj-a', organizationId: ORG_A, name: 'A' },
      { id: 'proj-b', organizationId: ORG_B, name: 'B' },
    ],
    environments: [
      { id: 'env-a', projectId: 'proj-a', name: 'production' },
      { id: 'env-empty', projectId: 'proj-a', name: 'empty' },
      { id: 'env-mixed', projectId: 'proj-a', name: 'mixed' },
      { id: 'env-b', projectId: 'proj-b', name: 'production' },
    ],
    moduleInstances: [
      {
        id: 'mi-web',
        environmentId: 'env-a',
        name: 'web',
        logSources: [
          logSource('app', 'acc-a', '/h/web'),
          logSource('two', 'acc-a', '/h/web', { logStreamPrefix: 'web/2' }),
          logSource('worker', 'acc-a', '/h/shared', { logStreamPrefix: 'worker/' }),
        ],
      },
      { id: 'mi-api', environmentId: 'env-a', name: 'api', logSources: [logSource('app', 'acc-a', '/h/api')] },
      { id: 'mi-quiet', environmentId: 'env-empty', name: 'quiet', logSources: [] },
      {
        id: 'mi-mixed',
        environmentId: 'env-mixed',
        name: 'mixed',
        logSources: [logSource('api', 'acc-a', '/h/api'), logSource('dead', 'acc-dead', '/aws/dead')],
      },
      { id: 'mi-b', environmentId: 'env-b', name: 'b', logSources: [logSource('web', 'acc-b', '/h/web')] },
    ],
    deploymentResources: [
      {
        id: 'dr-task',
        moduleInstanceId: 'mi-web',
        type: 'ecs-task',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: {
          taskArn: 'arn:aws:ecs:us-east-1:123456789012:task/main/0123456789abcdef',
          containerDefinitions: [
            {
              name: 'web',
              logConfiguration: {
                logDriver: 'awslogs',
                options: { 'awslogs-group': '/ecs/web', 'awslogs-stream-prefix': 'ecs' },
              },
            },
          ],
        },
      },
      {
        id: 'dr-lb',
        moduleInstanceId: 'mi-web',
        type: 'elb-load-balancer',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: { arn: 'x' },
      },
      {
        id: 'dr-b',
        moduleInstanceId: 'mi-b',
        type: 'ecs-task',
        cloudAccountId: 'acc-b',
        region: 'us-east-1',
        snapshot: {
          taskArn: 'arn:aws:ecs:us-east-1:123456789012:task/main/0123456789abcdef',
          containerDefinitions: [
            {
              name: 'web',
              logConfiguration: {
                logDriver: 'awslogs',
                options: { 'awslogs-group': '/h/web', 'awslogs-stream-prefix': 'web' },
              },
            },
          ],
        },
      },
    ],
    logEvents: events,
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    fixture: fixture(),
    config: { INSIGHTS_POLL_INTERVAL_MS: 10, AWS_CALL_TIMEOUT_MS: 2_000 },
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(1, 5) } },
      }),
  });
});
afterAll(async () => t?.close());

type Body = Record<string, unknown>;

const histogram = (body: Body, token: string | null = TOKENS.owner): Promise<TestResponse<Histogram>> =>
  t.request<Histogram>('POST', PATH, { token: token ?? undefined, body: { startTime: START, endTime: END, ...body } });

const query = (body: Body, token: string = TOKENS.owner): Promise<TestResponse<LogsInsightsResult>> =>
  t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
    token,
    body: { startTime: START, endTime: END, ...body },
  });

/** A 200 answer of exactly the documented shape. */
function ok(res: TestResponse<Histogram>): Histogram {
  expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({
    status: 200,
    body: undefined,
  });
  expect(Object.keys(res.body).sort()).toEqual(['buckets', 'missedSources', 'partial', 'unsupported']);
  for (const b of res.body.buckets) {
    expect(Object.keys(b).sort()).toEqual(['counts', 'endMs', 'startMs']);
    for (const [level, n] of Object.entries(b.counts)) {
      expect(LEVELS).toContain(level);
      expect(n).toBeGreaterThan(0);
    }
  }
  return res.body;
}

/** The buckets a client would draw from `rows`, computed here from the documented layout. */
function expectedBuckets(rows: LogsInsightsRow[], startMs: number, endMs: number, buckets: number): Bucket[] {
  const width = Math.ceil((endMs - startMs + 1) / buckets);
  const n = Math.ceil((endMs - startMs + 1) / width);
  const out: Bucket[] = Array.from({ length: n }, (_, i) => ({
    startMs: startMs + i * width,
    endMs: Math.min(endMs, startMs + (i + 1) * width - 1),
    counts: {},
  }));
  for (const r of rows) {
    const b = out[Math.floor((r.timestamp - startMs) / width)]!;
    b.counts[r.level] = (b.counts[r.level] ?? 0) + 1;
  }
  return out;
}

const total = (h: Histogram) => h.buckets.reduce((n, b) => n + Object.values(b.counts).reduce((m, c) => m + c, 0), 0);

/** The histogram of `body` counts exactly the rows the query returns for it. Returns both. */
async function expectSameAsQuery(body: Body, buckets?: number): Promise<{ h: Histogram; rows: LogsInsightsRow[] }> {
  const q = expectLogsInsightsOk(await query({ ...body, complete: true }));
  expect(q.nextEndTimeMs).toBe(0);
  const h = ok(await histogram({ ...body, ...(buckets === undefined ? {} : { buckets }) }));
  const startMs = typeof body.startTime === 'number' ? body.startTime : START;
  const endMs = typeof body.endTime === 'number' ? body.endTime : END;
  expect(h.buckets).toEqual(expectedBuckets(q.rows, startMs, endMs, buckets ?? 60));
  expect({ partial: h.partial, missedSources: h.missedSources, unsupported: h.unsupported }).toEqual({
    partial: q.partial,
    missedSources: q.missedSources,
    unsupported: q.unsupported,
  });
  return { h, rows: q.rows };
}

describe('counts', () => {
  it('counts the rows of the query per bucket and level, 60 buckets by default', async () => {
    const { h, rows } = await expectSameAsQuery({ environmentId: 'env-a' });
    expect(h.buckets).toHaveLength(60);
    expect(rows.length).toBeGreaterThan(300);
    expect(total(h)).toBe(rows.length);
    // Every level shows up somewhere, and an event two sources of one group read is counted once.
    expect(new Set(h.buckets.flatMap((b) => Object.keys(b.counts)))).toEqual(new Set(LEVELS));
  });

  it.each([1, 7, 60, 200])('with %i buckets', async (buckets) => {
    await expectSameAsQuery({ environmentId: 'env-a' }, buckets);
  });

  it('counts the window edges inclusively and nothing outside it', async () => {
    const { h } = await expectSameAsQuery(
      { moduleInstanceIds: ['mi-api'], filter: { kind: 'level', levels: ['ERROR'] } },
      3,
    );
    expect(h.buckets[0]!.counts.ERROR).toBeGreaterThanOrEqual(1);
    expect(h.buckets[2]!.counts.ERROR).toBeGreaterThanOrEqual(1);
    const edges = ok(await histogram({ moduleInstanceIds: ['mi-api'], startTime: END, endTime: END, buckets: 5 }));
    expect(edges.buckets).toEqual([{ startMs: END, endMs: END, counts: { ERROR: 1 } }]);
  });

  it.each<[string, Body]>([
    ['level', { kind: 'level', levels: ['ERROR', 'FATAL'] }],
    ['text contains (case-insensitive)', { kind: 'text', op: 'contains', value: 'ERROR' }],
    ['text contains, case-sensitive', { kind: 'text', op: 'contains', value: 'ERROR', caseSensitive: true }],
    ['text startsWith', { kind: 'text', op: 'startsWith', value: '{"level"' }],
    ['field eq', { kind: 'field', path: 'status', op: 'eq', value: 500 }],
    ['field exists', { kind: 'field', path: 'msg', op: 'exists' }],
    ['stream prefix', { kind: 'stream', op: 'prefix', value: 'web/2' }],
    [
      'not of or',
      {
        kind: 'not',
        node: {
          kind: 'or',
          nodes: [
            { kind: 'level', levels: ['INFO'] },
            { kind: 'stream', op: 'equals', value: 'cron/1' },
          ],
        },
      },
    ],
    ['nothing', { kind: 'not', node: { kind: 'all' } }],
  ])('filter %s: the same counts as the query, nothing unsupported', async (_name, filter) => {
    const { h } = await expectSameAsQuery({ environmentId: 'env-a', filter });
    expect(h.unsupported).toEqual([]);
  });

  it('a regex is dropped soundly: a superset of the rows, named in unsupported', async () => {
    const filter = {
      kind: 'and',
      nodes: [{ kind: 'all' }, { kind: 'text', op: 'regex', value: '^ERROR', caseSensitive: true }],
    };
    const h = ok(await histogram({ environmentId: 'env-a', filter }));
    expect(h.unsupported).toEqual([
      'filter.nodes[1]: a regex match on the message is not supported by the local log store in a histogram; the counts include rows it would exclude',
    ]);
    const exact = expectLogsInsightsOk(await query({ environmentId: 'env-a', filter, complete: true }));
    const literal = expectLogsInsightsOk(
      await query({
        environmentId: 'env-a',
        filter: { kind: 'text', op: 'contains', value: 'ERROR', caseSensitive: true },
        complete: true,
      }),
    );
    // Its required literal is still applied in SQL: exactly the rows containing "ERROR", more than the regex's.
    expect(h.buckets).toEqual(expectedBuckets(literal.rows, START, END, 60));
    expect(total(h)).toBeGreaterThan(exact.rows.length);
    // Under a not, the dropped regex leaves every row.
    const negated = ok(
      await histogram({
        environmentId: 'env-a',
        filter: { kind: 'not', node: { kind: 'text', op: 'regex', value: 'a+b' } },
      }),
    );
    const all = expectLogsInsightsOk(await query({ environmentId: 'env-a', complete: true }));
    expect(negated.buckets).toEqual(expectedBuckets(all.rows, START, END, 60));
    expect(negated.unsupported).toEqual([
      'filter.node: a regex match on the message is not supported by the local log store in a histogram; the counts include rows it would exclude',
    ]);
  });

  it('limit and complete are accepted and change nothing', async () => {
    const plain = ok(await histogram({ environmentId: 'env-a' }));
    expect(ok(await histogram({ environmentId: 'env-a', limit: 1, complete: false }))).toEqual(plain);
    expect(ok(await histogram({ environmentId: 'env-a', limit: 10_000, complete: true }))).toEqual(plain);
  });

  it('answers every bucket with empty counts for a selection without sources', async () => {
    const h = ok(await histogram({ environmentId: 'env-empty', buckets: 4 }));
    expect(h).toEqual({
      buckets: expectedBuckets([], START, END, 4),
      partial: false,
      missedSources: [],
      unsupported: [],
    });
  });
});

describe('buckets', () => {
  it('are equal, aligned to startTime, contiguous, oldest first, the last one ending at endTime', async () => {
    const startTime = T0 + 123;
    const endTime = T0 + 10_456;
    const h = ok(await histogram({ environmentId: 'env-a', startTime, endTime, buckets: 7 }));
    const width = Math.ceil((endTime - startTime + 1) / 7);
    expect(width).toBe(1477);
    expect(h.buckets).toHaveLength(7);
    h.buckets.forEach((b, i) => {
      expect(b.startMs).toBe(startTime + i * width);
      expect(b.endMs).toBe(i === 6 ? endTime : b.startMs + width - 1);
    });
  });

  it('are fewer than asked when the window has fewer milliseconds, one per millisecond', async () => {
    const h = ok(await histogram({ moduleInstanceIds: ['mi-api'], startTime: T0 + 40, endTime: T0 + 49 }));
    expect(h.buckets.map((b) => [b.startMs, b.endMs])).toEqual(
      Array.from({ length: 10 }, (_, i) => [T0 + 40 + i, T0 + 40 + i]),
    );
    expect(h.buckets[2]!.counts).toEqual({ INFO: 25 });
    // 100 ms in 60 buckets: W = 2, 50 buckets.
    expect(
      ok(await histogram({ moduleInstanceIds: ['mi-api'], startTime: T0, endTime: T0 + 99 })).buckets,
    ).toHaveLength(50);
  });

  it('rejects buckets outside 1..200, non-integers and strings with 400', async () => {
    for (const buckets of [0, -1, 201, 1.5, '2', null, true]) {
      const res = await histogram({ environmentId: 'env-a', buckets });
      expectError(res, 400, 'validation:request:invalid-body');
      expect(JSON.stringify(res.body)).toContain('buckets');
    }
  });
});

describe('the query rules', () => {
  /** The histogram answers `body` with the same error as the query. */
  async function sameError(body: Body, status: number, code?: string) {
    const h = await histogram(body);
    expectError(h, status, code);
    const q = await query(body);
    const shown = (r: TestResponse) => ({
      status: r.status,
      code: r.body.code,
      message: r.body.message,
      description: r.body.description,
    });
    expect(shown(h)).toEqual(shown(q));
  }

  it('selector rules 1 and 2 (422)', async () => {
    for (const body of [{}, { moduleInstanceIds: [] }, { logSourceKeys: [] }])
      await sameError(body, 422, 'logs:query:no-selector');
    await sameError(
      { deploymentResourceId: 'dr-task', environmentId: 'env-a' },
      422,
      'logs:query:conflicting-selectors',
    );
  });

  it('missing and malformed selections (404, 400)', async () => {
    await sameError({ environmentId: 'env-nope' }, 404, 'logs:environment:not-found');
    await sameError({ environmentId: 'env-a', moduleInstanceIds: ['mi-mixed'] }, 404, 'logs:module-instance:not-found');
    await sameError({ logSourceKeys: ['mi-web::nope'] }, 404, 'logs:log-source:not-found');
    await sameError({ logSourceKeys: ['mi-web'] }, 400, 'logs:log-source-key:invalid');
    await sameError({ deploymentResourceId: 'dr-nope' }, 404, 'logs:deployment-resource:not-found');
    await sameError({ deploymentResourceId: 'dr-lb' }, 422, 'logs:deployment-resource:unsupported-type');
  });

  it('the window and the filter', async () => {
    await sameError({ environmentId: 'env-a', startTime: END, endTime: START }, 422, 'logs:query:invalid-window');
    await sameError({ environmentId: 'env-a', startTime: 'yesterday' }, 400, 'validation:request:invalid-body');
    await sameError(
      { environmentId: 'env-a', filter: { kind: 'level', levels: ['LOUD'] } },
      400,
      'logs:filter:invalid',
    );
    await sameError(
      { environmentId: 'env-a', filter: { kind: 'text', op: 'regex', value: 'a(' } },
      400,
      'logs:filter:invalid',
    );
    await sameError({ environmentId: 'env-a', filter: 'level:ERROR' }, 400, 'validation:request:invalid-body');
    await sameError({ environmentId: 'env-a', filterPattern: 'x' }, 400, 'validation:request:invalid-body');
  });

  it('a deployment resource counts its streams only', async () => {
    const { h } = await expectSameAsQuery({ deploymentResourceId: 'dr-task' });
    expect(total(h)).toBe(2);
  });

  it('a source whose account fails: its group in missedSources, partial, the others counted', async () => {
    const h = ok(await histogram({ environmentId: 'env-mixed' }));
    expect(h).toMatchObject({ partial: true, missedSources: ['/aws/dead'] });
    const api = expectLogsInsightsOk(await query({ moduleInstanceIds: ['mi-api'], complete: true }));
    expect(h.buckets).toEqual(expectedBuckets(api.rows, START, END, 60));
    const q = expectLogsInsightsOk(await query({ environmentId: 'env-mixed' }));
    expect(q).toMatchObject({ partial: true, missedSources: ['/aws/dead'] });
  });
});

describe('tenancy and authentication', () => {
  const same = (a: TestResponse, b: TestResponse) => {
    const strip = (r: TestResponse) => ({
      status: r.status,
      code: r.body.code,
      message: r.body.message,
      description: r.body.description,
      keys: Object.keys(r.body).sort(),
    });
    expect(strip(a)).toEqual(strip(b));
  };

  it("answers another organization's environment, instance, key and resource exactly like missing ones, as the query does", async () => {
    for (const [theirs, missing] of [
      [{ environmentId: 'env-b' }, { environmentId: 'env-nope' }],
      [{ moduleInstanceIds: ['mi-b'] }, { moduleInstanceIds: ['mi-nope'] }],
      [{ logSourceKeys: ['mi-b::web'] }, { logSourceKeys: ['mi-nope::web'] }],
      [{ deploymentResourceId: 'dr-b' }, { deploymentResourceId: 'dr-nope' }],
    ] as const) {
      const h = await histogram(theirs);
      expect(h.status).toBe(404);
      same(h, await histogram(missing));
      same(h, await query(theirs));
    }
    same(
      await histogram({ environmentId: 'env-a' }, TOKENS.otherAdmin),
      await histogram({ environmentId: 'env-nope' }),
    );
  });

  it("never counts another organization's events, even in a log group of the same name", async () => {
    const theirs = ok(await histogram({ environmentId: 'env-b' }, TOKENS.otherAdmin));
    expect(total(theirs)).toBe(2);
    const ours = await expectSameAsQuery({ logSourceKeys: ['mi-web::app'] });
    expect(total(ours.h)).toBe(240);
  });

  it('lets viewers read; answers 401 without a valid token', async () => {
    expect(total(ok(await histogram({ moduleInstanceIds: ['mi-api'] }, TOKENS.viewer)))).toBeGreaterThan(0);
    expectError(await histogram({ environmentId: 'env-a' }, null), 401, 'auth:token:missing');
    expectError(await histogram({ environmentId: 'env-a' }, TOKENS.revoked), 401, 'auth:token:invalid');
  });
});
