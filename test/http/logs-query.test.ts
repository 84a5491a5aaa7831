// POST /cloud/logs/logs-insights, black-box over HTTP, on the local provider (operation 2, docs/design.md#2-log-query).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { logSource } from '../support/log-source.js';
import {
  expectLogsInsightsOk,
  LOGS_INSIGHTS_PATH as PATH,
  type LogsInsightsResult as Result,
  type LogsInsightsRow as Row,
} from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const START = '2024-01-15T11:00:00Z';
const END = '2024-01-15T13:00:00Z';

interface Ev {
  cloudAccountId: string;
  logGroup: string;
  logStream: string;
  timestamp: number;
  message: string;
  level: string;
}
const ev = (
  cloudAccountId: string,
  logGroup: string,
  logStream: string,
  offset: number,
  level: string,
  message: string,
): Ev => ({
  cloudAccountId,
  logGroup,
  logStream,
  timestamp: T0 + offset,
  level,
  message,
});

// Org A, environment env-a: instance mi-web (sources app, access, worker with a stream prefix) and mi-api.
const E = {
  w1: ev(
    'acc-a',
    '/berth/web',
    'web/1',
    1000,
    'INFO',
    '{"level":"info","msg":"request served","status":200,"path":"/api/users","user":{"id":"u1","tags":["a","b"]}}',
  ),
  w2: ev(
    'acc-a',
    '/berth/web',
    'web/1',
    2000,
    'ERROR',
    '{"level":"error","msg":"db timeout","status":500,"path":"/api/orders","retry":true}',
  ),
  w3: ev('acc-a', '/berth/web', 'web/1', 3000, 'INFO', '{"level":30,"msg":"pino info","status":201}'),
  w4: ev('acc-a', '/berth/web', 'web/1', 4000, 'ERROR', '{"level":50,"msg":"pino error","status":"500"}'),
  w5: ev('acc-a', '/berth/web', 'web/1', 5000, 'WARN', 'WARN disk 91% full'),
  w6: ev('acc-a', '/berth/web', 'web/1', 6000, 'DEBUG', 'DEBUG cache miss key=abc'),
  w7: ev('acc-a', '/berth/web', 'web/2', 1500, 'TRACE', 'TRACE entering handler'),
  w8: ev('acc-a', '/berth/web', 'web/2', 2500, 'FATAL', '2024-01-15T12:00:02Z FATAL out of memory'),
  w9: ev('acc-a', '/berth/web', 'web/2', 3500, 'UNKNOWN', 'plain line without level'),
  w10: ev('acc-a', '/berth/web', 'web/2', 4500, 'WARN', '{"severity":"WARNING","msg":"slow query","ms":1500}'),
  w11: ev('acc-a', '/berth/web', 'web/2', 5500, 'ERROR', '[error] Connection refused'),
  a12: ev('acc-a', '/berth/web-access', 'access/1', 1200, 'UNKNOWN', 'GET /health 200'),
  a13: ev('acc-a', '/berth/web-access', 'access/1', 2200, 'UNKNOWN', 'GET /api/users 500'),
  k14: ev('acc-a', '/berth/shared', 'worker/1', 1300, 'DEBUG', '{"lvl":"debug","msg":"job started","job":"email"}'),
  k15: ev(
    'acc-a',
    '/berth/shared',
    'worker/1',
    2300,
    'INFO',
    '{"lvl":"info","msg":"job done","job":"email","count":3}',
  ),
  c16: ev('acc-a', '/berth/shared', 'cron/1', 1400, 'INFO', 'INFO cron tick (outside the worker/ prefix)'),
  p17: ev('acc-a', '/berth/api', 'api/1', 1600, 'INFO', 'INFO api ready'),
  p18: ev('acc-a', '/berth/api', 'api/1', 2600, 'ERROR', 'ERROR api crashed'),
  o19: ev('acc-a', '/berth/other-env', 'x/1', 1700, 'INFO', 'INFO other env line'),
  old: ev('acc-a', '/berth/web', 'web/1', -2 * 3_600_000, 'INFO', 'INFO too old'),
  new: ev('acc-a', '/berth/web', 'web/1', 2 * 3_600_000, 'INFO', 'INFO too new'),
  // Org B: the same group name on its own account, and its own source.
  b1: ev('acc-b', '/berth/web', 'web/1', 1000, 'INFO', 'INFO org b, same group name'),
  b2: ev('acc-b', '/b/app', 'b/1', 1100, 'INFO', 'INFO org b secret'),
  // Deployment resource streams.
  t1: ev('acc-a', '/ecs/web', 'ecs/web/0123456789abcdef', 1000, 'INFO', 'INFO web container up'),
  t2: ev('acc-a', '/ecs/web', 'ecs/web/0123456789abcdef', 2000, 'ERROR', 'ERROR web container failed'),
  t3: ev('acc-a', '/ecs/web', 'svc/shared/0123456789abcdef', 2500, 'INFO', 'INFO shared container, same group'),
  t4: ev('acc-a', '/ecs/sidecar', 'ecs/sidecar/0123456789abcdef', 1800, 'INFO', 'INFO sidecar up'),
  tx1: ev('acc-a', '/ecs/web', 'ecs/web/fedcba9876543210', 1500, 'INFO', 'INFO another task'),
  tx2: ev(
    'acc-a',
    '/ecs/sidecar',
    'ecs/web/0123456789abcdef',
    1900,
    'INFO',
    'INFO web stream name in the sidecar group',
  ),
  tx3: ev('acc-a', '/ecs/web', 'ecs/web/0123456789abcdef-2', 1950, 'INFO', 'INFO a longer stream name'),
  v1: ev('acc-a', '/berth/deploys', 'releases/rel-1/i-0abc123/app', 100, 'INFO', 'INFO rel-1 app'),
  v2: ev('acc-a', '/berth/deploys', 'releases/rel-1/i-0abc123/deploy', 200, 'INFO', 'INFO rel-1 deploy'),
  v3: ev('acc-a', '/berth/deploys', 'releases/rel-2/i-0abc123/app', 300, 'ERROR', 'ERROR rel-2 app'),
  v4: ev('acc-a', '/berth/deploys', 'releases/rel-2/i-0abc123/deploy', 400, 'INFO', 'INFO rel-2 deploy'),
  vx1: ev('acc-a', '/berth/deploys', 'releases/rel-1/i-other/app', 500, 'INFO', 'INFO another instance'),
  vx2: ev('acc-a', '/berth/deploys', 'releases/rel-3/i-0abc123/app', 600, 'INFO', 'INFO a release not in the snapshot'),
  vx3: ev(
    'acc-a',
    '/berth/deploys',
    'releases/rel-1/i-0abc123/app-extra',
    700,
    'INFO',
    'INFO not an exact stream name',
  ),
} satisfies Record<string, Ev>;
type Key = keyof typeof E;

const ENV_A: Key[] = [
  'w1',
  'w2',
  'w3',
  'w4',
  'w5',
  'w6',
  'w7',
  'w8',
  'w9',
  'w10',
  'w11',
  'a12',
  'a13',
  'k14',
  'k15',
  'p17',
  'p18',
];

// Paging data (env-bulk): two sources on two accounts (two query units), hundreds of rows per millisecond.
const TB = T0 + 100_000;
const bulk: Ev[] = [];
function addBulk(account: string, group: string, at: number, n: number, tag: string, isError: (i: number) => boolean) {
  for (let i = 0; i < n; i++) {
    const level = isError(i) ? 'ERROR' : 'INFO';
    bulk.push(ev(account, group, i % 2 === 0 ? 's/1' : 's/2', at - T0, level, `${level} ${tag}-${i}`));
  }
}
addBulk('acc-a', '/bulk/one', TB + 500, 300, 'one@500', (i) => i % 50 === 7);
addBulk('acc-a', '/bulk/one', TB + 400, 250, 'one@400', (i) => i % 60 === 13);
addBulk('acc-a', '/bulk/one', TB + 450, 1, 'one@450', () => false);
for (let ms = 1; ms <= 60; ms++) addBulk('acc-a', '/bulk/one', TB + ms, 1, `one@${ms}`, () => ms % 9 === 0);
addBulk('acc-a2', '/bulk/two', TB + 400, 200, 'two@400', (i) => i % 70 === 3);
addBulk('acc-a2', '/bulk/two', TB + 300, 120, 'two@300', (i) => i === 119);
for (let ms = 200; ms < 240; ms++) addBulk('acc-a2', '/bulk/two', TB + ms, 1, `two@${ms}`, () => ms % 11 === 0);

// env-seq: 1,200 rows, one per 10 ms.
const TS = T0 + 200_000;
const seq = Array.from({ length: 1200 }, (_, i) =>
  ev('acc-a', '/bulk/seq', 'seq/1', TS - T0 + i * 10, 'INFO', `INFO seq ${i}`),
);

const TASK_ARN = 'arn:aws:ecs:us-east-1:123456789012:task/main-cluster/0123456789abcdef';
const awslogs = (group: string, prefix: string) => ({
  logDriver: 'awslogs',
  options: { 'awslogs-group': group, 'awslogs-stream-prefix': prefix, 'awslogs-region': 'us-east-1' },
});

function fixture(): Record<string, unknown> {
  const strip = ({ level: _level, ...e }: Ev) => ({ ...e, region: 'us-east-1' });
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      { id: 'acc-a2', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      { id: 'acc-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
    ],
    projects: [
      { id: 'proj-a', organizationId: ORG_A, name: 'A' },
      { id: 'proj-b', organizationId: ORG_B, name: 'B' },
    ],
    environments: [
      { id: 'env-a', projectId: 'proj-a', name: 'production' },
      { id: 'env-a2', projectId: 'proj-a', name: 'staging' },
      { id: 'env-bulk', projectId: 'proj-a', name: 'bulk' },
      { id: 'env-seq', projectId: 'proj-a', name: 'seq' },
      { id: 'env-empty', projectId: 'proj-a', name: 'empty' },
      { id: 'env-shared', projectId: 'proj-a', name: 'shared' },
      { id: 'env-b', projectId: 'proj-b', name: 'production' },
    ],
    moduleInstances: [
      {
        id: 'mi-web',
        environmentId: 'env-a',
        name: 'web',
        logSources: [
          logSource('app', 'acc-a', '/berth/web'),
          logSource('access', 'acc-a', '/berth/web-access'),
          logSource('worker', 'acc-a', '/berth/shared', { logStreamPrefix: 'worker/' }),
        ],
      },
      { id: 'mi-api', environmentId: 'env-a', name: 'api', logSources: [logSource('app', 'acc-a', '/berth/api')] },
      {
        id: 'mi-other-env',
        environmentId: 'env-a2',
        name: 'other',
        logSources: [logSource('app', 'acc-a', '/berth/other-env')],
      },
      {
        id: 'mi-bulk',
        environmentId: 'env-bulk',
        name: 'bulk',
        logSources: [logSource('one', 'acc-a', '/bulk/one'), logSource('two', 'acc-a2', '/bulk/two')],
      },
      { id: 'mi-seq', environmentId: 'env-seq', name: 'seq', logSources: [logSource('seq', 'acc-a', '/bulk/seq')] },
      { id: 'mi-quiet', environmentId: 'env-empty', name: 'quiet', logSources: [] },
      {
        id: 'mi-shared',
        environmentId: 'env-shared',
        name: 'shared',
        logSources: [
          logSource('two', 'acc-a', '/berth/web', { logStreamPrefix: 'web/2' }),
          logSource('all', 'acc-a', '/berth/web'),
        ],
      },
      {
        id: 'mi-b',
        environmentId: 'env-b',
        name: 'b',
        logSources: [logSource('app', 'acc-b', '/b/app'), logSource('web', 'acc-b', '/berth/web')],
      },
    ],
    deploymentResources: [
      {
        id: 'dr-task',
        moduleInstanceId: 'mi-web',
        type: 'ecs-task',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: {
          taskArn: TASK_ARN,
          containerDefinitions: [
            { name: 'web', logConfiguration: awslogs('/ecs/web', 'ecs') },
            { name: 'sidecar', logConfiguration: awslogs('/ecs/sidecar', 'ecs') },
            { name: 'shared', logConfiguration: awslogs('/ecs/web', 'svc') },
            { name: 'quiet', logConfiguration: { logDriver: 'json-file', options: {} } },
            { name: 'bare' },
          ],
        },
      },
      {
        id: 'dr-vm',
        moduleInstanceId: 'mi-web',
        type: 'ec2-instance',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: { instanceId: 'i-0abc123', logGroup: '/berth/deploys', releases: [{ id: 'rel-1' }, { id: 'rel-2' }] },
      },
      {
        id: 'dr-vm-new',
        moduleInstanceId: 'mi-web',
        type: 'ec2-instance',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: { instanceId: 'i-0abc123', logGroup: '/berth/deploys', releases: [] },
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
        id: 'dr-broken',
        moduleInstanceId: 'mi-web',
        type: 'ecs-task',
        cloudAccountId: 'acc-a',
        region: 'us-east-1',
        snapshot: {},
      },
      {
        id: 'dr-b',
        moduleInstanceId: 'mi-b',
        type: 'ecs-task',
        cloudAccountId: 'acc-b',
        region: 'us-east-1',
        snapshot: {
          taskArn: TASK_ARN,
          containerDefinitions: [{ name: 'web', logConfiguration: awslogs('/berth/web', 'web') }],
        },
      },
    ],
    logEvents: [...Object.values(E), ...bulk, ...seq].map(strip),
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture() });
});
afterAll(async () => t.close());

/** `token: null` sends no Authorization header. */
const query = (body: Record<string, unknown>, token: string | null = TOKENS.owner): Promise<TestResponse<Result>> =>
  t.request<Result>('POST', PATH, { token: token ?? undefined, body: { startTime: START, endTime: END, ...body } });

/** The messages of `keys`, newest first. */
const newestFirst = (keys: Key[]) =>
  keys
    .map((k) => E[k])
    .sort((a, b) => b.timestamp - a.timestamp)
    .map((e) => e.message);

function ok(res: TestResponse<Result>): Result {
  const body = expectLogsInsightsOk(res);
  expect(Object.keys(body).sort()).toEqual([
    'missedSources',
    'nextEndTimeMs',
    'partial',
    'resultCount',
    'rows',
    'unsupported',
  ]);
  return body;
}

async function expectRows(body: Record<string, unknown>, keys: Key[]): Promise<Result> {
  const result = ok(await query(body));
  expect(result.rows.map((r) => r.message)).toEqual(newestFirst(keys));
  return result;
}

describe('rows', () => {
  it('answers the environment rows newest first, each with exactly the spec fields', async () => {
    const result = await expectRows({ environmentId: 'env-a' }, ENV_A);
    expect(result).toMatchObject({ nextEndTimeMs: 0, partial: false, missedSources: [], unsupported: [] });
    const byMessage = new Map(result.rows.map((r) => [r.message, r]));
    for (const key of ENV_A) {
      const e = E[key];
      const row = byMessage.get(e.message)!;
      expect(Object.keys(row).sort()).toEqual([
        'eventId',
        'level',
        'logSourceId',
        'logStream',
        'message',
        'sourceId',
        'timestamp',
      ]);
      expect(row).toMatchObject({ timestamp: e.timestamp, level: e.level, logStream: e.logStream });
      expect(typeof row.eventId).toBe('string');
      expect(row.eventId!.length).toBeGreaterThan(0);
    }
    expect(byMessage.get(E.w1.message)).toMatchObject({ sourceId: 'mi-web', logSourceId: 'app' });
    expect(byMessage.get(E.a12.message)).toMatchObject({ sourceId: 'mi-web', logSourceId: 'access' });
    expect(byMessage.get(E.k14.message)).toMatchObject({ sourceId: 'mi-web', logSourceId: 'worker' });
    expect(byMessage.get(E.p18.message)).toMatchObject({ sourceId: 'mi-api', logSourceId: 'app' });
    expect(new Set(result.rows.map((r) => r.eventId)).size).toBe(result.rows.length);
  });

  it('derives levels from JSON fields (level, severity, lvl, pino numbers) and leading tokens', async () => {
    const result = ok(await query({ environmentId: 'env-a' }));
    const levels = Object.fromEntries(result.rows.map((r) => [r.message, r.level]));
    for (const key of ENV_A) expect(levels[E[key].message], key).toBe(E[key].level);
  });

  it('keeps the window inclusive at both ends, in ISO 8601 with or without zone and in epoch milliseconds', async () => {
    await expectRows({ environmentId: 'env-a', startTime: E.w2.timestamp, endTime: E.w2.timestamp }, ['w2']);
    await expectRows({ environmentId: 'env-a', startTime: String(E.w1.timestamp), endTime: String(E.w2.timestamp) }, [
      'w1',
      'a12',
      'k14',
      'w7',
      'p17',
      'w2',
    ]);
    await expectRows(
      { environmentId: 'env-a', startTime: '2024-01-15T12:00:01', endTime: '2024-01-15T13:00:02+01:00' },
      ['w1', 'a12', 'k14', 'w7', 'p17', 'w2'],
    );
    await expectRows({ environmentId: 'env-a', startTime: '2024-01-15T12:00:06.000Z', endTime: '2024-01-16' }, [
      'w6',
      'new',
    ]);
  });

  it('answers an environment without sources with no rows and 0', async () => {
    const result = ok(await query({ environmentId: 'env-empty' }));
    expect(result).toEqual({
      rows: [],
      resultCount: 0,
      nextEndTimeMs: 0,
      partial: false,
      missedSources: [],
      unsupported: [],
    });
  });
});

describe('selectors', () => {
  it('rule 1: at least one selector (an empty moduleInstanceIds or logSourceKeys selects nothing)', async () => {
    for (const body of [
      {},
      { moduleInstanceIds: [] },
      { logSourceKeys: [] },
      { moduleInstanceIds: [], logSourceKeys: [] },
    ]) {
      expectError(await query(body), 422, 'logs:query:no-selector');
    }
  });

  it('rule 2: deploymentResourceId alone', async () => {
    for (const extra of [
      { environmentId: 'env-a' },
      { moduleInstanceIds: ['mi-web'] },
      { logSourceKeys: ['mi-web::app'] },
    ]) {
      expectError(await query({ deploymentResourceId: 'dr-task', ...extra }), 422, 'logs:query:conflicting-selectors');
    }
  });

  it('moduleInstanceIds narrows an environment to a subset', async () => {
    await expectRows({ environmentId: 'env-a', moduleInstanceIds: ['mi-api'] }, ['p17', 'p18']);
    await expectRows({ environmentId: 'env-a', moduleInstanceIds: ['mi-api', 'mi-web', 'mi-api'] }, ENV_A);
  });

  it('answers 404 for a moduleInstanceId outside the environment', async () => {
    expectError(
      await query({ environmentId: 'env-a', moduleInstanceIds: ['mi-api', 'mi-other-env'] }),
      404,
      'logs:module-instance:not-found',
    );
  });

  it('moduleInstanceIds alone selects exactly these instances, across environments', async () => {
    await expectRows({ moduleInstanceIds: ['mi-api'] }, ['p17', 'p18']);
    await expectRows({ moduleInstanceIds: ['mi-api', 'mi-other-env'] }, ['p17', 'p18', 'o19']);
  });

  it('logSourceKeys name sources without an environment', async () => {
    await expectRows({ logSourceKeys: ['mi-web::access'] }, ['a12', 'a13']);
    await expectRows({ logSourceKeys: ['mi-web::access', 'mi-other-env::app'] }, ['a12', 'a13', 'o19']);
    await expectRows({ logSourceKeys: ['mi-web::worker', 'mi-web::worker'] }, ['k14', 'k15']);
  });

  it('returns an event of a group two selected sources read once, attributed to the first source by id', async () => {
    const WEB: Key[] = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10', 'w11'];
    const both = await expectRows({ environmentId: 'env-shared' }, WEB);
    expect(new Set(both.rows.map((r) => `${r.sourceId}::${r.logSourceId}`))).toEqual(new Set(['mi-shared::all']));
    const two = await expectRows({ logSourceKeys: ['mi-shared::two'] }, ['w7', 'w8', 'w9', 'w10', 'w11']);
    expect(new Set(two.rows.map((r) => r.logSourceId))).toEqual(new Set(['two']));
  });

  it('a source with a logStreamPrefix reads only its streams', async () => {
    const result = await expectRows({ logSourceKeys: ['mi-web::worker'] }, ['k14', 'k15']);
    expect(result.rows.every((r) => r.logStream.startsWith('worker/'))).toBe(true);
  });

  it('logSourceKeys override moduleInstanceIds for the instances they name; the others keep every source', async () => {
    await expectRows({ moduleInstanceIds: ['mi-web', 'mi-api'], logSourceKeys: ['mi-web::worker'] }, [
      'k14',
      'k15',
      'p17',
      'p18',
    ]);
    await expectRows({ environmentId: 'env-a', logSourceKeys: ['mi-web::access'] }, ['a12', 'a13', 'p17', 'p18']);
    await expectRows(
      { environmentId: 'env-a', moduleInstanceIds: ['mi-web'], logSourceKeys: ['mi-web::access', 'mi-web::worker'] },
      ['a12', 'a13', 'k14', 'k15'],
    );
  });

  it('answers 404 for a logSourceKey whose instance is outside the environment', async () => {
    expectError(
      await query({ environmentId: 'env-a', logSourceKeys: ['mi-other-env::app'] }),
      404,
      'logs:module-instance:not-found',
    );
  });

  it('answers 400 logs:log-source-key:invalid for a malformed key', async () => {
    for (const key of ['mi-web', 'mi-web::', '::app', 'mi-web:app', 'mi-web::app::x', '::']) {
      const res = await query({ logSourceKeys: ['mi-web::app', key] });
      expectError(res, 400, 'logs:log-source-key:invalid');
    }
  });

  it('answers 404 for ids that name nothing', async () => {
    expectError(await query({ environmentId: 'env-nope' }), 404, 'logs:environment:not-found');
    expectError(await query({ moduleInstanceIds: ['mi-web', 'mi-nope'] }), 404, 'logs:module-instance:not-found');
    expectError(await query({ logSourceKeys: ['mi-nope::app'] }), 404, 'logs:module-instance:not-found');
    expectError(await query({ logSourceKeys: ['mi-web::nope'] }), 404, 'logs:log-source:not-found');
    expectError(await query({ deploymentResourceId: 'dr-nope' }), 404, 'logs:deployment-resource:not-found');
  });
});

describe('deployment resources', () => {
  it('ecs-task: per-container groups and exact awslogs stream names, with empty sourceId and logSourceId', async () => {
    const result = await expectRows({ deploymentResourceId: 'dr-task' }, ['t1', 't2', 't3', 't4']);
    expect(new Set(result.rows.map((r) => r.logStream))).toEqual(
      new Set(['ecs/web/0123456789abcdef', 'svc/shared/0123456789abcdef', 'ecs/sidecar/0123456789abcdef']),
    );
    for (const row of result.rows) expect(row).toMatchObject({ sourceId: '', logSourceId: '' });
    expect(result.nextEndTimeMs).toBe(0);
  });

  it('ec2-instance: both stream families of every release, nothing else', async () => {
    const result = await expectRows({ deploymentResourceId: 'dr-vm' }, ['v1', 'v2', 'v3', 'v4']);
    expect(result.rows.map((r) => r.logStream).sort()).toEqual([
      'releases/rel-1/i-0abc123/app',
      'releases/rel-1/i-0abc123/deploy',
      'releases/rel-2/i-0abc123/app',
      'releases/rel-2/i-0abc123/deploy',
    ]);
    for (const row of result.rows) expect(row).toMatchObject({ sourceId: '', logSourceId: '' });
  });

  it('ec2-instance without a release yet: no rows', async () => {
    const result = ok(await query({ deploymentResourceId: 'dr-vm-new' }));
    expect(result).toEqual({
      rows: [],
      resultCount: 0,
      nextEndTimeMs: 0,
      partial: false,
      missedSources: [],
      unsupported: [],
    });
  });

  it('applies the filter to deployment resource rows', async () => {
    await expectRows({ deploymentResourceId: 'dr-vm', filter: { kind: 'level', levels: ['ERROR'] } }, ['v3']);
    await expectRows({ deploymentResourceId: 'dr-task', filter: { kind: 'stream', op: 'prefix', value: 'svc/' } }, [
      't3',
    ]);
  });

  it('rejects any other type with 422 logs:deployment-resource:unsupported-type', async () => {
    const res = await query({ deploymentResourceId: 'dr-lb' });
    expectError(res, 422, 'logs:deployment-resource:unsupported-type');
    expect(res.body).toMatchObject({
      metadata: { type: 'elb-load-balancer', supportedTypes: ['ecs-task', 'ec2-instance'] },
    });
  });

  it('rejects a task snapshot that names no stream with 422', async () => {
    expectError(await query({ deploymentResourceId: 'dr-broken' }), 422, 'logs:deployment-resource:invalid-snapshot');
  });
});

// ---------------------------------------------------------------------------------------------

type Filter = Record<string, unknown>;
const NOTHING: Filter = { kind: 'not', node: { kind: 'all' } };

/** Each leaf kind with its exact answer over env-a. */
const LEAVES: Array<[string, Filter, Key[]]> = [
  ['level', { kind: 'level', levels: ['ERROR'] }, ['w2', 'w4', 'w11', 'p18']],
  ['level, several', { kind: 'level', levels: ['TRACE', 'FATAL'] }, ['w7', 'w8']],
  ['level UNKNOWN', { kind: 'level', levels: ['UNKNOWN'] }, ['w9', 'a12', 'a13']],
  ['text contains (case-insensitive by default)', { kind: 'text', op: 'contains', value: 'DISK' }, ['w5']],
  ['text contains, case-sensitive', { kind: 'text', op: 'contains', value: 'DISK', caseSensitive: true }, []],
  ['text contains a JSON fragment', { kind: 'text', op: 'contains', value: '"status":50' }, ['w2']],
  ['text equals', { kind: 'text', op: 'equals', value: 'get /health 200' }, ['a12']],
  ['text equals, case-sensitive', { kind: 'text', op: 'equals', value: 'get /health 200', caseSensitive: true }, []],
  ['text startsWith', { kind: 'text', op: 'startsWith', value: 'GET /api' }, ['a13']],
  ['text regex', { kind: 'text', op: 'regex', value: '^\\[error\\]' }, ['w11']],
  [
    'text regex with alternation, case-sensitive',
    { kind: 'text', op: 'regex', value: 'job (started|done)', caseSensitive: true },
    ['k14', 'k15'],
  ],
  ['text regex outside the SQL subset (word boundary)', { kind: 'text', op: 'regex', value: '\\bquery\\b' }, ['w10']],
  ['field eq number (no coercion of "500")', { kind: 'field', path: 'status', op: 'eq', value: 500 }, ['w2']],
  ['field eq string', { kind: 'field', path: 'status', op: 'eq', value: '500' }, ['w4']],
  ['field eq boolean', { kind: 'field', path: 'retry', op: 'eq', value: true }, ['w2']],
  ['field neq (the field must exist)', { kind: 'field', path: 'status', op: 'neq', value: 200 }, ['w2', 'w3', 'w4']],
  ['field gt', { kind: 'field', path: 'ms', op: 'gt', value: 1000 }, ['w10']],
  ['field gte', { kind: 'field', path: 'status', op: 'gte', value: 500 }, ['w2']],
  ['field lt', { kind: 'field', path: 'status', op: 'lt', value: 201 }, ['w1']],
  ['field lte', { kind: 'field', path: 'status', op: 'lte', value: 201 }, ['w1', 'w3']],
  ['field lt on strings', { kind: 'field', path: 'path', op: 'lt', value: '/api/p' }, ['w2']],
  ['field exists', { kind: 'field', path: 'retry', op: 'exists' }, ['w2']],
  ['field exists, nested path', { kind: 'field', path: 'user.id', op: 'exists' }, ['w1']],
  ['field in', { kind: 'field', path: 'path', op: 'in', value: ['/api/users', '/nope', 3] }, ['w1']],
  ['field contains on an array', { kind: 'field', path: 'user.tags', op: 'contains', value: 'a' }, ['w1']],
  ['field contains on a string', { kind: 'field', path: 'msg', op: 'contains', value: 'job' }, ['k14', 'k15']],
  ['stream equals', { kind: 'stream', op: 'equals', value: 'web/2' }, ['w7', 'w8', 'w9', 'w10', 'w11']],
  ['stream prefix', { kind: 'stream', op: 'prefix', value: 'worker/' }, ['k14', 'k15']],
];

const not = (keys: Key[]) => ENV_A.filter((k) => !keys.includes(k));

describe('filter', () => {
  it.each(LEAVES)('%s: alone, under and, under or, under not', async (_name, leaf, expected) => {
    await expectRows({ environmentId: 'env-a', filter: leaf }, expected);
    await expectRows({ environmentId: 'env-a', filter: { kind: 'and', nodes: [{ kind: 'all' }, leaf] } }, expected);
    await expectRows({ environmentId: 'env-a', filter: { kind: 'or', nodes: [NOTHING, leaf] } }, expected);
    await expectRows({ environmentId: 'env-a', filter: { kind: 'not', node: leaf } }, not(expected));
    await expectRows({ environmentId: 'env-a', filter: { kind: 'not', node: { kind: 'not', node: leaf } } }, expected);
  });

  it.each<[string, Filter, Key[]]>([
    ['all', { kind: 'all' }, ENV_A],
    ['not all', NOTHING, []],
    [
      'and',
      {
        kind: 'and',
        nodes: [
          { kind: 'level', levels: ['ERROR'] },
          { kind: 'stream', op: 'equals', value: 'web/1' },
        ],
      },
      ['w2', 'w4'],
    ],
    [
      'or',
      {
        kind: 'or',
        nodes: [
          { kind: 'level', levels: ['FATAL'] },
          { kind: 'text', op: 'contains', value: 'refused' },
        ],
      },
      ['w8', 'w11'],
    ],
    [
      'not',
      { kind: 'not', node: { kind: 'stream', op: 'prefix', value: 'web/' } },
      ['a12', 'a13', 'k14', 'k15', 'p17', 'p18'],
    ],
    [
      'and of field exists and not field eq',
      {
        kind: 'and',
        nodes: [
          { kind: 'field', path: 'status', op: 'exists' },
          { kind: 'not', node: { kind: 'field', path: 'status', op: 'eq', value: 200 } },
        ],
      },
      ['w2', 'w3', 'w4'],
    ],
    [
      'or of ands',
      {
        kind: 'or',
        nodes: [
          {
            kind: 'and',
            nodes: [
              { kind: 'stream', op: 'equals', value: 'api/1' },
              { kind: 'level', levels: ['ERROR'] },
            ],
          },
          {
            kind: 'and',
            nodes: [
              { kind: 'field', path: 'job', op: 'eq', value: 'email' },
              { kind: 'not', node: { kind: 'text', op: 'contains', value: 'started' } },
            ],
          },
        ],
      },
      ['p18', 'k15'],
    ],
    [
      'not of and',
      {
        kind: 'not',
        node: {
          kind: 'and',
          nodes: [
            { kind: 'level', levels: ['ERROR'] },
            { kind: 'text', op: 'contains', value: 'pino' },
          ],
        },
      },
      not(['w4']),
    ],
    [
      'not of or (neither INFO nor UNKNOWN nor DEBUG)',
      {
        kind: 'not',
        node: {
          kind: 'or',
          nodes: [
            { kind: 'level', levels: ['INFO', 'UNKNOWN'] },
            { kind: 'level', levels: ['DEBUG'] },
          ],
        },
      },
      ['w2', 'w4', 'w5', 'w7', 'w8', 'w10', 'w11', 'p18'],
    ],
    [
      'or of a field and a regex',
      {
        kind: 'or',
        nodes: [
          { kind: 'field', path: 'ms', op: 'gt', value: 1000 },
          { kind: 'text', op: 'regex', value: 'GET .* 500' },
        ],
      },
      ['w10', 'a13'],
    ],
  ])('%s', async (_name, filter, expected) => {
    const result = await expectRows({ environmentId: 'env-a', filter }, expected);
    expect(result.unsupported).toEqual([]);
  });

  it('answers 400 logs:filter:invalid naming the bad node', async () => {
    const cases: Filter[] = [
      { kind: 'nope' },
      { kind: 'text', op: 'regex', value: 'a(' },
      { kind: 'level', levels: ['LOUD'] },
      { kind: 'and', nodes: [] },
      { kind: 'and', nodes: [{ kind: 'all' }, { kind: 'field', path: 'a..b', op: 'eq', value: 1 }] },
      { kind: 'text', op: 'contains', value: 'x', extra: true },
      { kind: 'text', op: 'regex', value: 'a'.repeat(513) },
      JSON.parse(`${'{"kind":"not","node":'.repeat(17)}{"kind":"all"}${'}'.repeat(17)}`) as Filter,
    ];
    for (const filter of cases) {
      const res = await query({ environmentId: 'env-a', filter });
      expectError(res, 400, 'logs:filter:invalid');
      const body = res.body as unknown as { details?: unknown; message: string };
      expect(JSON.stringify(body.details ?? body.message)).toContain('filter');
    }
    expect(
      JSON.stringify(
        (
          await query({
            environmentId: 'env-a',
            filter: { kind: 'and', nodes: [{ kind: 'all' }, { kind: 'level', levels: ['LOUD'] }] },
          })
        ).body,
      ),
    ).toContain('filter.nodes[1].levels');
  });

  it('answers 400 for a filter that is not an object', async () => {
    for (const filter of ['level:ERROR', 3, null, []])
      expectError(await query({ environmentId: 'env-a', filter }), 400);
  });
});

describe('window, limit and complete', () => {
  it('answers 422 logs:query:invalid-window when startTime is after endTime', async () => {
    expectError(
      await query({ environmentId: 'env-a', startTime: END, endTime: START }),
      422,
      'logs:query:invalid-window',
    );
    expectError(
      await query({ environmentId: 'env-a', startTime: T0 + 1, endTime: T0 }),
      422,
      'logs:query:invalid-window',
    );
  });

  it('answers 400 for times that are not ISO 8601 or epoch milliseconds', async () => {
    for (const startTime of [
      'yesterday',
      '',
      '2024-13-01T00:00:00Z',
      '2024-02-30T00:00:00Z',
      '1e12',
      -1,
      1.5,
      true,
      null,
    ]) {
      expectError(await query({ environmentId: 'env-a', startTime }), 400, 'validation:request:invalid-body');
    }
    expectError(await query({ environmentId: 'env-a', endTime: '12:00' }), 400, 'validation:request:invalid-body');
    const missing = await t.request('POST', PATH, {
      token: TOKENS.owner,
      body: { environmentId: 'env-a', endTime: END },
    });
    expectError(missing, 400, 'validation:request:invalid-body');
  });

  it('checks limit bounds: 1..10000, integer, no coercion', async () => {
    for (const limit of [0, -1, 10_001, 'x', '5', 1.5, null]) {
      expectError(await query({ environmentId: 'env-a', limit }), 400, 'validation:request:invalid-body');
    }
    expect(ok(await query({ environmentId: 'env-a', limit: 1 })).rows).toHaveLength(1);
    expect(ok(await query({ environmentId: 'env-seq', limit: 10_000 })).rows).toHaveLength(1200);
  });

  it('defaults to the most recent 1000 rows, and the next page continues right below them', async () => {
    const first = ok(await query({ environmentId: 'env-seq' }));
    expect(first.rows).toHaveLength(1000);
    expect(first.rows[0]!.message).toBe('INFO seq 1199');
    expect(first.rows[999]!.message).toBe('INFO seq 200');
    // Anywhere from the next older row (seq 199) up to just below the page's last row.
    expect(first.nextEndTimeMs).toBeGreaterThanOrEqual(TS + 199 * 10);
    expect(first.nextEndTimeMs).toBeLessThan(TS + 200 * 10);
    const second = ok(await query({ environmentId: 'env-seq', endTime: first.nextEndTimeMs }));
    expect(second.rows).toHaveLength(200);
    expect(second.rows[0]!.message).toBe('INFO seq 199');
    expect(second.nextEndTimeMs).toBe(0);
  });

  it('complete returns the whole window whatever the limit', async () => {
    const all = ok(await query({ environmentId: 'env-seq', complete: true, limit: 5 }));
    expect(all.rows).toHaveLength(1200);
    expect(all.nextEndTimeMs).toBe(0);
    const part = ok(await query({ environmentId: 'env-seq', complete: true, startTime: TS + 100, endTime: TS + 199 }));
    expect(part.rows.map((r) => r.message)).toEqual(Array.from({ length: 10 }, (_, i) => `INFO seq ${19 - i}`));
    expect(part.nextEndTimeMs).toBe(0);
    const notComplete = ok(await query({ environmentId: 'env-seq', complete: false, limit: 5 }));
    expect(notComplete.rows).toHaveLength(5);
    expectError(await query({ environmentId: 'env-seq', complete: 'yes' }), 400, 'validation:request:invalid-body');
  });
});

describe('paging', () => {
  const BULK = bulk.filter((e) => e.logGroup === '/bulk/one' || e.logGroup === '/bulk/two');

  async function walk(body: Record<string, unknown>, limit: number): Promise<{ rows: Row[]; pages: Result[] }> {
    const rows: Row[] = [];
    const pages: Result[] = [];
    let endTime: string | number = END;
    for (let i = 0; i < 1000; i++) {
      const page = ok(await query({ ...body, limit, endTime }));
      pages.push(page);
      rows.push(...page.rows);
      for (const r of page.rows)
        expect(r.timestamp).toBeLessThanOrEqual(typeof endTime === 'number' ? endTime : Date.parse(endTime));
      if (page.rows.length > limit) expect(new Set(page.rows.map((r) => r.timestamp)).size).toBe(1);
      if (page.nextEndTimeMs === 0) return { rows, pages };
      expect(page.nextEndTimeMs).toBeLessThan(typeof endTime === 'number' ? endTime : Date.parse(endTime));
      endTime = page.nextEndTimeMs;
    }
    throw new Error('paging did not end');
  }

  function expectExactlyOnce(rows: Row[], expected: Ev[]) {
    expect(rows).toHaveLength(expected.length);
    expect(new Set(rows.map((r) => r.eventId)).size).toBe(rows.length);
    expect(rows.map((r) => r.message).sort()).toEqual(expected.map((e) => e.message).sort());
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1]!.timestamp).toBeGreaterThanOrEqual(rows[i]!.timestamp);
  }

  it.each([7, 100, 250, 301, 1000])(
    'returns every row exactly once with limit %i across hundreds of rows per millisecond',
    async (limit) => {
      const { rows, pages } = await walk({ environmentId: 'env-bulk' }, limit);
      expectExactlyOnce(rows, BULK);
      expect(pages.every((p) => p.partial === false)).toBe(true);
      if (limit === 100) {
        // 300 rows at TB+500 and 450 at TB+400 are each one page, returned whole.
        expect(pages.some((p) => p.rows.length === 300 && p.rows.every((r) => r.timestamp === TB + 500))).toBe(true);
        expect(pages.some((p) => p.rows.length === 450 && p.rows.every((r) => r.timestamp === TB + 400))).toBe(true);
      }
    },
  );

  it('with a narrow level filter short pages are not the end: every ERROR row exactly once', async () => {
    const errors = BULK.filter((e) => e.level === 'ERROR');
    expect(errors.length).toBeGreaterThan(15);
    for (const limit of [1, 3, 50]) {
      const { rows } = await walk({ environmentId: 'env-bulk', filter: { kind: 'level', levels: ['ERROR'] } }, limit);
      expectExactlyOnce(rows, errors);
    }
  });

  it('nextEndTimeMs is sent back as is, as a number or as a digit string', async () => {
    const first = ok(await query({ environmentId: 'env-bulk', limit: 10 }));
    expect(first.nextEndTimeMs).toBeGreaterThan(0);
    const asNumber = ok(await query({ environmentId: 'env-bulk', limit: 10, endTime: first.nextEndTimeMs }));
    const asString = ok(await query({ environmentId: 'env-bulk', limit: 10, endTime: String(first.nextEndTimeMs) }));
    expect(asString.rows).toEqual(asNumber.rows);
    expect(asNumber.rows.some((r) => first.rows.some((f) => f.eventId === r.eventId))).toBe(false);
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

  it("answers another organization's environment, instance, key and resource exactly like missing ones", async () => {
    same(await query({ environmentId: 'env-b' }), await query({ environmentId: 'env-nope' }));
    expectError(await query({ environmentId: 'env-b' }), 404, 'logs:environment:not-found');
    same(await query({ moduleInstanceIds: ['mi-b'] }), await query({ moduleInstanceIds: ['mi-nope'] }));
    expectError(await query({ moduleInstanceIds: ['mi-b'] }), 404, 'logs:module-instance:not-found');
    same(await query({ logSourceKeys: ['mi-b::app'] }), await query({ logSourceKeys: ['mi-nope::app'] }));
    same(await query({ deploymentResourceId: 'dr-b' }), await query({ deploymentResourceId: 'dr-nope' }));
    expectError(await query({ deploymentResourceId: 'dr-b' }), 404, 'logs:deployment-resource:not-found');
    // Org B's admin sees org A the same way.
    same(
      await query({ environmentId: 'env-a' }, TOKENS.otherAdmin),
      await query({ environmentId: 'env-nope' }, TOKENS.otherAdmin),
    );
    same(
      await query({ deploymentResourceId: 'dr-task' }, TOKENS.otherAdmin),
      await query({ deploymentResourceId: 'dr-nope' }, TOKENS.otherAdmin),
    );
  });

  it("never returns another organization's events, even in a log group of the same name", async () => {
    const result = ok(await query({ environmentId: 'env-a' }));
    expect(result.rows.map((r) => r.message)).not.toContain(E.b1.message);
    const theirs = ok(await query({ environmentId: 'env-b' }, TOKENS.otherAdmin));
    expect(theirs.rows.map((r) => r.message)).toEqual([E.b2.message, E.b1.message]);
  });

  it('lets every member read, viewers included; a key scoped to one organization sees only that one', async () => {
    for (const token of [
      TOKENS.viewer,
      TOKENS.member,
      TOKENS.admin,
      TOKENS.ownerUnscoped,
      TOKENS.superadmin,
      TOKENS.multiOrg,
    ]) {
      const result = ok(await query({ environmentId: 'env-a', moduleInstanceIds: ['mi-api'] }, token));
      expect(result.rows.map((r) => r.message)).toEqual(newestFirst(['p17', 'p18']));
    }
    expect(ok(await query({ environmentId: 'env-b' }, TOKENS.multiOrg)).rows).toHaveLength(2);
    expectError(await query({ environmentId: 'env-b' }, TOKENS.viewer), 404, 'logs:environment:not-found');
  });

  it('answers 401 without a token, with a bad one, and with expired or revoked keys', async () => {
    expectError(await query({ environmentId: 'env-a' }, null), 401, 'auth:token:missing');
    expectError(await query({ environmentId: 'env-a' }, 'garbage'), 401, 'auth:token:invalid');
    expectError(await query({ environmentId: 'env-a' }, TOKENS.expired), 401, 'auth:token:invalid');
    expectError(await query({ environmentId: 'env-a' }, TOKENS.revoked), 401, 'auth:token:invalid');
  });

  it('answers 401 before looking at the body', async () => {
    expectError(await t.request('POST', PATH, { body: { nonsense: true } }), 401, 'auth:token:missing');
  });
});

describe('request body', () => {
  it('rejects unknown properties with 400 naming them', async () => {
    for (const extra of [{ filterPattern: 'ERROR' }, { nextToken: 'x' }, { sourceIds: ['mi-web'] }]) {
      const res = await query({ environmentId: 'env-a', ...extra });
      expectError(res, 400, 'validation:request:invalid-body');
      expect(JSON.stringify(res.body)).toContain(Object.keys(extra)[0]!);
    }
  });

  it('rejects wrong types without coercion', async () => {
    expectError(await query({ environmentId: 3 }), 400, 'validation:request:invalid-body');
    expectError(await query({ moduleInstanceIds: 'mi-web' }), 400, 'validation:request:invalid-body');
    expectError(await query({ logSourceKeys: [7] }), 400, 'validation:request:invalid-body');
  });

  it('rejects a body that is not JSON', async () => {
    const res = await t.request('POST', PATH, {
      token: TOKENS.owner,
      rawBody: '{',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400);
  });
});
