// GET /organizations/{id}/log-catalog (issue 13), black-box over HTTP on the local provider.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOG_CATALOG_LIMITS } from '../../src/core/schemas/log-catalog.js';
import { createServices } from '../../src/services/index.js';
import { LogCatalogService } from '../../src/services/log-catalog.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { logSource } from '../support/log-source.js';
import { expectLogsInsightsOk, LOGS_INSIGHTS_PATH, type LogsInsightsResult } from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const SCOPED_TO_B = 'berth_k-two-b_two-roles-b-secret-00000';
const ROOT_SCOPED_A = 'berth_k-root-a_root-a-secret-00000000';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const TASK_ID = '0123456789abcdef';
const TASK_ARN = `arn:aws:ecs:us-east-1:123456789012:task/main-cluster/${TASK_ID}`;
const awslogs = (group: string, prefix: string) => ({
  logDriver: 'awslogs',
  options: { 'awslogs-group': group, 'awslogs-stream-prefix': prefix },
});
const BIG_ORG = 'org-big';
const BIG_COUNT = LOG_CATALOG_LIMITS.moduleInstances + 1;

/** One event in every (group, stream) pair, derived or decoy, so rows show what the query reads. */
function probeEvents(account: string, groups: string[], streams: string[]) {
  return groups.flatMap((logGroup, g) =>
    streams.map((logStream, s) => ({
      cloudAccountId: account,
      region: 'us-east-1',
      logGroup,
      logStream,
      timestamp: T0 + g * 100 + s,
      message: JSON.stringify({ group: logGroup, stream: logStream }),
    })),
  );
}

const ECS_GROUPS = ['/ecs/web', '/ecs/sidecar', '/ecs/decoy'];
const ECS_STREAMS = [`ecs/web/${TASK_ID}`, `svc/shared/${TASK_ID}`, `ecs/sidecar/${TASK_ID}`, `ecs/web/other-task`];
const VM_GROUPS = ['/berth/deploys', '/berth/decoy'];
const VM_STREAMS = [
  'releases/rel-1/i-0abc/app',
  'releases/rel-1/i-0abc/deploy',
  'releases/rel-2/i-0abc/app',
  'releases/rel-2/i-0abc/deploy',
  'releases/rel-3/i-0abc/app',
  'releases/rel-1/i-other/app',
];

function fixture(): Record<string, unknown> {
  const resource = (id: string, moduleInstanceId: string, type: string, snapshot: object, account = 'acc-a') => ({
    id,
    moduleInstanceId,
    type,
    cloudAccountId: account,
    region: 'us-east-1',
    snapshot,
  });
  return mergeWorld(baseWorld(), {
    organizations: [{ id: BIG_ORG, name: 'Big', permittedIdentityProviders: [] }],
    principals: [
      {
        id: 'p-two',
        name: 'Owner of A, viewer of B',
        memberships: [
          { organizationId: ORG_A, role: 'owner' },
          { organizationId: ORG_B, role: 'viewer' },
        ],
        apiKeys: [{ id: 'k-two-b', token: SCOPED_TO_B, organizationId: ORG_B }],
      },
      {
        id: 'p-root-a',
        name: 'Root, scoped',
        superadmin: true,
        apiKeys: [{ id: 'k-root-a', token: ROOT_SCOPED_A, organizationId: ORG_A }],
      },
    ],
    cloudAccounts: [
      { id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      {
        id: 'acc-a-aws',
        organizationId: ORG_A,
        provider: 'aws',
        region: 'eu-west-1',
        endpoint: 'http://127.0.0.1:9',
      },
      { id: 'acc-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
      { id: 'acc-big', organizationId: BIG_ORG, provider: 'local', region: 'us-east-1' },
    ],
    projects: [
      { id: 'proj-z', organizationId: ORG_A, name: 'Zulu' },
      { id: 'proj-a1', organizationId: ORG_A, name: 'Alpha' },
      { id: 'proj-a0', organizationId: ORG_A, name: 'Alpha' },
      { id: 'proj-empty', organizationId: ORG_A, name: 'Empty' },
      { id: 'proj-b', organizationId: ORG_B, name: 'B' },
      { id: 'proj-big', organizationId: BIG_ORG, name: 'Big' },
    ],
    environments: [
      { id: 'env-stage', projectId: 'proj-a1', name: 'staging' },
      { id: 'env-prod', projectId: 'proj-a1', name: 'production' },
      { id: 'env-none', projectId: 'proj-a1', name: 'no instances' },
      { id: 'env-z', projectId: 'proj-z', name: 'production' },
      { id: 'env-a0', projectId: 'proj-a0', name: 'production' },
      { id: 'env-b', projectId: 'proj-b', name: 'production' },
      { id: 'env-big', projectId: 'proj-big', name: 'big' },
    ],
    moduleInstances: [
      {
        id: 'mi-web',
        environmentId: 'env-prod',
        name: 'web',
        logSources: [
          logSource('zz-app', 'acc-a', '/berth/web'),
          logSource('access', 'acc-a', '/berth/web-access', { logStreamPrefix: 'access/' }),
          logSource('cloud', 'acc-a-aws', '/aws/web', { region: 'eu-west-1' }),
        ],
      },
      { id: 'mi-api', environmentId: 'env-prod', name: 'api', logSources: [logSource('app', 'acc-a', '/berth/api')] },
      { id: 'mi-stage', environmentId: 'env-stage', name: 'web', logSources: [] },
      { id: 'mi-z', environmentId: 'env-z', name: 'zeta', logSources: [logSource('app', 'acc-a', '/berth/z')] },
      { id: 'mi-a0', environmentId: 'env-a0', name: 'first', logSources: [] },
      {
        id: 'mi-b',
        environmentId: 'env-b',
        name: 'b',
        logSources: [logSource('app', 'acc-b', '/b/app')],
      },
      ...Array.from({ length: BIG_COUNT }, (_, i) => ({
        id: `mi-big-${String(i).padStart(4, '0')}`,
        environmentId: 'env-big',
        name: 'same',
        logSources: [],
      })),
    ],
    deploymentResources: [
      resource('dr-task', 'mi-web', 'ecs-task', {
        taskArn: TASK_ARN,
        containerDefinitions: [
          { name: 'web', logConfiguration: awslogs('/ecs/web', 'ecs') },
          { name: 'sidecar', logConfiguration: awslogs('/ecs/sidecar', 'ecs') },
          { name: 'shared', logConfiguration: awslogs('/ecs/web', 'svc') },
          { name: 'quiet', logConfiguration: { logDriver: 'json-file', options: {} } },
        ],
      }),
      resource('dr-vm', 'mi-web', 'ec2-instance', {
        instanceId: 'i-0abc',
        logGroup: '/berth/deploys',
        releases: [{ id: 'rel-1' }, { id: 'rel-2' }],
      }),
      resource('dr-lb', 'mi-web', 'elb-load-balancer', { arn: 'x' }),
      resource('dr-broken', 'mi-web', 'ecs-task', {}),
      resource(
        'dr-b',
        'mi-b',
        'ecs-task',
        {
          taskArn: TASK_ARN,
          containerDefinitions: [{ name: 'web', logConfiguration: awslogs('/b/web', 'web') }],
        },
        'acc-b',
      ),
    ],
    logEvents: [...probeEvents('acc-a', ECS_GROUPS, ECS_STREAMS), ...probeEvents('acc-a', VM_GROUPS, VM_STREAMS)],
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture() });
  // What a seed does not write: a source of another kind, and (issue 9) a source and a resource of org A
  // reading through org B's account.
  const row = { module_instance_id: 'mi-web', region: 'us-east-1', log_stream_prefix: null };
  await t.store.db
    .insertInto('log_sources')
    .values([
      { ...row, id: 'metrics', kind: 'ui.metrics', cloud_account_id: 'acc-a', log_group: '/berth/metrics' },
      { ...row, id: 'crossed', kind: 'ui.logs', cloud_account_id: 'acc-b', log_group: '/b/app' },
    ])
    .execute();
  await t.store.db
    .insertInto('deployment_resources')
    .values({
      id: 'dr-crossed',
      module_instance_id: 'mi-web',
      type: 'ec2-instance',
      cloud_account_id: 'acc-b',
      region: 'us-east-1',
      snapshot: JSON.stringify({ instanceId: 'i-b', logGroup: '/b/app', releases: [{ id: 'r' }] }),
    })
    .execute();
  await t.services.caches.settle();
}, 60_000);
afterAll(async () => t?.close());

const catalog = (org: string, token: string | undefined = TOKENS.owner) =>
  t.request('GET', `/organizations/${encodeURIComponent(org)}/log-catalog`, { token });

function ok(res: TestResponse) {
  expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({
    status: 200,
    body: undefined,
  });
  expect(Object.keys(res.body)).toEqual(['data']);
  return res.body.data;
}

const source = (mi: string, id: string, logGroup: string, extra: Record<string, unknown> = {}) => ({
  id,
  key: `${mi}::${id}`,
  cloudAccountId: 'acc-a',
  provider: 'local',
  region: 'us-east-1',
  logGroup,
  ...extra,
});
const unsupported = (id: string, type: string) => ({
  id,
  type,
  cloudAccountId: 'acc-a',
  region: 'us-east-1',
  supported: false,
  logGroups: [],
  logStreamNames: [],
});

const ORG_A_CATALOG = {
  organization: { id: ORG_A, name: 'Org A' },
  projects: [
    {
      id: 'proj-a0',
      name: 'Alpha',
      environments: [
        {
          id: 'env-a0',
          name: 'production',
          moduleInstances: [{ id: 'mi-a0', name: 'first', logSources: [], deploymentResources: [] }],
        },
      ],
    },
    {
      id: 'proj-a1',
      name: 'Alpha',
      environments: [
        {
          id: 'env-prod',
          name: 'production',
          moduleInstances: [
            {
              id: 'mi-api',
              name: 'api',
              logSources: [source('mi-api', 'app', '/berth/api')],
              deploymentResources: [],
            },
            {
              id: 'mi-web',
              name: 'web',
              logSources: [
                source('mi-web', 'access', '/berth/web-access', { logStreamPrefix: 'access/' }),
                source('mi-web', 'cloud', '/aws/web', {
                  cloudAccountId: 'acc-a-aws',
                  provider: 'aws',
                  region: 'eu-west-1',
                }),
                source('mi-web', 'zz-app', '/berth/web'),
              ],
              deploymentResources: [
                unsupported('dr-broken', 'ecs-task'),
                unsupported('dr-lb', 'elb-load-balancer'),
                {
                  id: 'dr-task',
                  type: 'ecs-task',
                  cloudAccountId: 'acc-a',
                  region: 'us-east-1',
                  supported: true,
                  logGroups: ['/ecs/web', '/ecs/sidecar'],
                  logStreamNames: [`ecs/web/${TASK_ID}`, `svc/shared/${TASK_ID}`, `ecs/sidecar/${TASK_ID}`],
                },
                {
                  id: 'dr-vm',
                  type: 'ec2-instance',
                  cloudAccountId: 'acc-a',
                  region: 'us-east-1',
                  supported: true,
                  logGroups: ['/berth/deploys'],
                  logStreamNames: VM_STREAMS.slice(0, 4),
                },
              ],
            },
          ],
        },
        {
          id: 'env-stage',
          name: 'staging',
          moduleInstances: [{ id: 'mi-stage', name: 'web', logSources: [], deploymentResources: [] }],
        },
      ],
    },
    {
      id: 'proj-z',
      name: 'Zulu',
      environments: [
        {
          id: 'env-z',
          name: 'production',
          moduleInstances: [
            { id: 'mi-z', name: 'zeta', logSources: [source('mi-z', 'app', '/berth/z')], deploymentResources: [] },
          ],
        },
      ],
    },
  ],
  truncated: false,
};

describe('GET /organizations/{id}/log-catalog', () => {
  it("lists the organization's tree by name then id, with ui.logs sources and derived resource streams", async () => {
    expect(ok(await catalog(ORG_A))).toEqual(ORG_A_CATALOG);
  });

  it('leaves out other kinds of sources and links through another organization’s account', async () => {
    const text = (await catalog(ORG_A)).text;
    for (const absent of ['metrics', 'crossed', 'dr-crossed', 'acc-b', '/b/app', 'proj-empty', 'env-none']) {
      expect(text).not.toContain(absent);
    }
  });

  it('answers every member the same, viewers included, and superadmins whose key reaches the organization', async () => {
    for (const token of [
      TOKENS.viewer,
      TOKENS.member,
      TOKENS.admin,
      TOKENS.ownerUnscoped,
      TOKENS.multiOrg,
      TOKENS.superadmin,
      ROOT_SCOPED_A,
    ]) {
      expect(ok(await catalog(ORG_A, token))).toEqual(ORG_A_CATALOG);
    }
  });

  it("shows org B's admin org B only, without anything of org A's", async () => {
    const data = ok(await catalog(ORG_B, TOKENS.otherAdmin));
    expect(data.organization).toEqual({ id: ORG_B, name: 'Org B' });
    expect(data.projects.map((p: { id: string }) => p.id)).toEqual(['proj-b']);
    const instance = data.projects[0].environments[0].moduleInstances[0];
    expect(instance.logSources).toEqual([
      {
        id: 'app',
        key: 'mi-b::app',
        cloudAccountId: 'acc-b',
        provider: 'local',
        region: 'us-east-1',
        logGroup: '/b/app',
      },
    ]);
    expect(instance.deploymentResources.map((r: { id: string }) => r.id)).toEqual(['dr-b']);
    expect(JSON.stringify(data)).not.toMatch(/acc-a|mi-web|proj-a|crossed/);
  });

  const same = (a: TestResponse, b: TestResponse) => {
    const strip = (r: TestResponse) => {
      const { requestId: _requestId, ...rest } = r.body;
      return { status: r.status, body: JSON.stringify(rest).replaceAll(/org-[a-z0-9-]+/g, 'ORG') };
    };
    expect(strip(a)).toEqual(strip(b));
  };

  it('answers an organization the key cannot read exactly like one that does not exist', async () => {
    const cases: [string, string][] = [
      [TOKENS.otherAdmin, ORG_A],
      [SCOPED_TO_B, ORG_A],
      [TOKENS.owner, ORG_B],
      [TOKENS.member, ORG_B],
      [ROOT_SCOPED_A, ORG_B],
      [TOKENS.owner, BIG_ORG],
    ];
    for (const [token, org] of cases) {
      const res = await catalog(org, token);
      expectError(res, 404, 'logs:organization:not-found');
      same(res, await catalog('org-nope', token));
    }
    expectError(await catalog('org-nope', TOKENS.superadmin), 404, 'logs:organization:not-found');
    // The key scoped to org B reads org B, though its principal is also an owner of org A.
    expect(ok(await catalog(ORG_B, SCOPED_TO_B)).organization.id).toBe(ORG_B);
  });

  it('answers 401 to a missing, expired or revoked token, and 400 to an invalid id', async () => {
    expectError(await t.request('GET', `/organizations/${ORG_A}/log-catalog`), 401, 'auth:token:missing');
    expectError(await catalog(ORG_A, TOKENS.expired), 401, 'auth:token:invalid');
    expectError(await catalog(ORG_A, TOKENS.revoked), 401, 'auth:token:invalid');
    expectError(await catalog('x'.repeat(129)), 400, 'validation:request:invalid-params');
  });

  it('cuts the module instances at the documented limit, in tree order, and says so', async () => {
    const data = ok(await catalog(BIG_ORG, TOKENS.superadmin));
    expect(data.truncated).toBe(true);
    const ids = data.projects[0].environments[0].moduleInstances.map((m: { id: string }) => m.id);
    expect(ids).toHaveLength(LOG_CATALOG_LIMITS.moduleInstances);
    expect(ids).toEqual([...ids].sort());
    expect(ids.at(-1)).toBe(`mi-big-${String(LOG_CATALOG_LIMITS.moduleInstances - 1).padStart(4, '0')}`);
  });
});

describe('derived log groups and streams', () => {
  const query = (deploymentResourceId: string): Promise<TestResponse<LogsInsightsResult>> =>
    t.request<LogsInsightsResult>('POST', LOGS_INSIGHTS_PATH, {
      token: TOKENS.owner,
      body: { deploymentResourceId, startTime: T0 - 60_000, endTime: T0 + 60_000 },
    });

  it.each(['dr-task', 'dr-vm'])(
    '%s: the catalog names exactly the groups and streams the log query reads',
    async (id) => {
      const data = ok(await catalog(ORG_A));
      const web = data.projects[1].environments[0].moduleInstances[1];
      const resource = web.deploymentResources.find((r: { id: string }) => r.id === id);
      const result = expectLogsInsightsOk(await query(id));
      expect(result.partial).toBe(false);
      const read = result.rows.map((r) => JSON.parse(r.message) as { group: string; stream: string });
      for (const [row, probe] of result.rows.map((r, i) => [r, read[i]!] as const)) {
        expect(row.logStream).toBe(probe.stream);
      }
      expect(new Set(read.map((r) => r.group))).toEqual(new Set(resource.logGroups));
      expect(new Set(read.map((r) => r.stream))).toEqual(new Set(resource.logStreamNames));
      // Every (group, stream) the query read is one the catalog names, and the decoys were written.
      expect(read.length).toBeGreaterThan(0);
      expect(read.length).toBeLessThan(resource.logGroups.length * resource.logStreamNames.length + 1);
    },
  );

  it('marks as unsupported exactly the resources the log query refuses', async () => {
    expectError(await query('dr-lb'), 422, 'logs:deployment-resource:unsupported-type');
    expectError(await query('dr-broken'), 422, 'logs:deployment-resource:invalid-snapshot');
  });
});

describe('limits on sources and resources', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await startTestApp({
      fixture: fixture(),
      services: (store, config) => ({
        ...createServices(store, config),
        catalog: new LogCatalogService(store.db, { moduleInstances: 3, logSources: 2, deploymentResources: 1 }),
      }),
    });
  }, 60_000);
  afterAll(async () => small?.close());

  it('lists the first ones of each in tree order and says the answer was cut', async () => {
    const res = await small.request('GET', `/organizations/${ORG_A}/log-catalog`, { token: TOKENS.owner });
    const data = ok(res);
    expect(data.truncated).toBe(true);
    const instances = data.projects.flatMap((p: any) => p.environments.flatMap((e: any) => e.moduleInstances));
    expect(instances.map((m: { id: string }) => m.id)).toEqual(['mi-a0', 'mi-api', 'mi-web']);
    expect(instances.flatMap((m: any) => m.logSources.map((s: { key: string }) => s.key))).toEqual([
      'mi-api::app',
      'mi-web::access',
    ]);
    expect(instances.flatMap((m: any) => m.deploymentResources.map((r: { id: string }) => r.id))).toEqual([
      'dr-broken',
    ]);
    expect(data.projects.map((p: { id: string }) => p.id)).toEqual(['proj-a0', 'proj-a1']);
  });

  it('says nothing was cut when everything fits', async () => {
    const data = ok(await small.request('GET', `/organizations/${ORG_B}/log-catalog`, { token: TOKENS.otherAdmin }));
    expect(data.truncated).toBe(false);
  });
});
