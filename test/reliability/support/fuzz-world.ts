// The world the fuzzers run against: the domain world (org A, org B, domains and certificates) plus a
// log source on a `local` account, deployment resources of every kind and a few log events, so that
// fuzzed requests reach the deep validation of every route rather than stopping at a 404.
import { domainWorld } from '../../support/domain-world.js';
import { logSource } from '../../support/log-source.js';

/** Names the request generators draw from: ids that exist, so that requests get past the lookups. */
export const KNOWN = {
  organizations: ['org-a', 'org-b', 'org-empty'],
  environments: ['env-a', 'env-b'],
  moduleInstances: ['mi-a-web', 'mi-a-worker', 'mi-a-empty', 'mi-b-shop'],
  logSourceKeys: ['mi-a-web::app', 'mi-a-web::access', 'mi-a-worker::jobs', 'mi-b-shop::app'],
  deploymentResources: ['dr-task', 'dr-vm', 'dr-lb', 'dr-broken'],
  accounts: ['acct-a', 'acct-b'],
  regions: ['eu-west-1', 'us-east-1'],
  logGroups: ['/app/web', '/app/web-access', '/app/jobs', '/ecs/web'],
  logStreams: ['web/1', 'web/2', 'jobs/a'],
  certificates: ['cert-www', 'cert-apps', 'cert-b'],
  principals: ['p-owner', 'p-admin', 'p-member', 'p-viewer', 'p-other', 'p-root', 'p-fuzz', 'p-nope'],
  /** Keys the fuzzers may revoke: none of them is a key the fuzzers authenticate with. */
  apiKeys: ['k-fuzz-a', 'k-fuzz-b', 'k-expired', 'k-revoked', 'key0000000000000000'],
  domainNames: [
    'www.acme.example',
    'api.apps.acme.example',
    '*.apps.acme.example',
    'shop.beta.example',
    'new.acme.example',
    'berth.dev',
  ],
} as const;

const T0 = Date.UTC(2026, 0, 1);

/** The fuzz fixture (see the file comment); every module instance of the domain world gets its log sources. */
export function fuzzFixture(): Record<string, unknown> {
  const events = KNOWN.logStreams.flatMap((stream, s) =>
    Array.from({ length: 5 }, (_, i) => ({
      cloudAccountId: 'acct-a',
      region: 'eu-west-1',
      logGroup: s === 2 ? '/app/jobs' : '/app/web',
      logStream: stream,
      timestamp: T0 + s * 1000 + i,
      message:
        i % 2 === 0
          ? JSON.stringify({ level: 'info', msg: `event ${i}`, user: { id: i } })
          : `ERROR event ${i} of ${stream}`,
    })),
  );
  const world = domainWorld({
    deploymentResources: [
      {
        id: 'dr-task',
        moduleInstanceId: 'mi-a-web',
        type: 'ecs-task',
        cloudAccountId: 'acct-a',
        region: 'eu-west-1',
        snapshot: {
          taskArn: 'arn:aws:ecs:eu-west-1:111122223333:task/cluster/0123456789abcdef',
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
        id: 'dr-vm',
        moduleInstanceId: 'mi-a-web',
        type: 'ec2-instance',
        cloudAccountId: 'acct-a',
        region: 'eu-west-1',
        snapshot: { instanceId: 'i-0abc', logGroup: '/app/deploys', releases: [{ id: 'rel-1' }] },
      },
      {
        id: 'dr-lb',
        moduleInstanceId: 'mi-a-web',
        type: 'elb-load-balancer',
        cloudAccountId: 'acct-a',
        region: 'eu-west-1',
        snapshot: { arn: 'x' },
      },
      {
        id: 'dr-broken',
        moduleInstanceId: 'mi-a-web',
        type: 'ecs-task',
        cloudAccountId: 'acct-a',
        region: 'eu-west-1',
        snapshot: {},
      },
    ],
    logEvents: events,
  }) as Record<string, Record<string, unknown>[]>;
  const sources: Record<string, Record<string, unknown>[]> = {
    'mi-a-web': [
      logSource('app', 'acct-a', '/app/web', { region: 'eu-west-1' }),
      logSource('access', 'acct-a', '/app/web-access', { region: 'eu-west-1' }),
    ],
    'mi-a-worker': [logSource('jobs', 'acct-a', '/app/jobs', { region: 'eu-west-1', logStreamPrefix: 'jobs/' })],
    'mi-b-shop': [logSource('app', 'acct-b', '/b/app')],
  };
  world.moduleInstances = world.moduleInstances!.map((mi) => ({ ...mi, logSources: sources[mi.id as string] ?? [] }));
  world.principals!.push({
    id: 'p-fuzz',
    name: 'Viewer whose keys the fuzzers revoke',
    memberships: [
      { organizationId: 'org-a', role: 'viewer' },
      { organizationId: 'org-b', role: 'viewer' },
    ],
    apiKeys: [
      { id: 'k-fuzz-a', token: 'berth_k-fuzz-a_fuzz-a-secret-0000000000', organizationId: 'org-a' },
      { id: 'k-fuzz-b', token: 'berth_k-fuzz-b_fuzz-b-secret-0000000000', organizationId: 'org-b' },
    ],
  });
  return world;
}
