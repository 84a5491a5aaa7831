// The world of the tenant isolation matrix: the standard two organizations and their callers, plus
// one twin set of objects in each organization — a cloud account, a project, an environment, a module
// instance with a log source, a deployment resource, a pending certificate, domains and log events.
// The twins use the same log group and stream names, so only the organization tells them apart.
import { createHash } from 'node:crypto';
import { baseWorld, mergeWorld, ORG_A, ORG_B } from '../../support/world.js';
import type { SqlStatement } from './berth-process.js';

/** Text that only org A's (B's) data holds: a response to a caller who cannot see that org must not contain it. */
export const MARKER = { A: 'alpha-secret', B: 'bravo-secret' } as const;

export type Org = 'A' | 'B';

/** Tokens of the callers the base world does not have. */
export const EXTRA_TOKENS = {
  /** p-both: owner of org A, viewer of org B; this key is scoped to org B. */
  bothScopedB: 'berth_k-both-b_both-scoped-b-000000000000',
  superadminScopedA: 'berth_k-root-a_root-scoped-a-00000000000',
  superadminScopedB: 'berth_k-root-b_root-scoped-b-00000000000',
} as const;

/**
 * Session cookies of people signed in (written straight into `sessions` by `SESSION_ROWS`, as a sign-in would):
 * org A's owner through SSO_BROKER, which org A permits, and a member of org A through WORKFORCE_1, which it does not.
 */
export const SESSIONS = {
  permitted: 'matrix-session-owner-sso-broker-0000000000',
  notPermitted: 'matrix-session-member-workforce-00000000',
} as const;

export const SESSION_ROWS: SqlStatement[] = [
  { id: SESSIONS.permitted, principal: 'p-owner', provider: 'SSO_BROKER' },
  { id: SESSIONS.notPermitted, principal: 'p-member', provider: 'WORKFORCE_1' },
].map((s) => ({
  text: `insert into sessions (id_hash, principal_id, provider, expires_at)
    values ($1, $2, $3, now() + interval '1 day')`,
  params: [createHash('sha256').update(s.id).digest('hex'), s.principal, s.provider],
}));

/** The ids of each organization's twin objects, and ids that exist nowhere. */
export const IDS = {
  A: {
    organization: ORG_A,
    account: 'acct-a',
    environment: 'env-a',
    moduleInstance: 'mi-a-web',
    logSource: 'app-a',
    deploymentResource: 'dr-a',
    certificate: 'cert-a',
  },
  B: {
    organization: ORG_B,
    account: 'acct-b',
    environment: 'env-b',
    moduleInstance: 'mi-b-web',
    logSource: 'app-b',
    deploymentResource: 'dr-b',
    certificate: 'cert-b',
  },
  missing: {
    organization: 'org-nope',
    account: 'acct-nope',
    environment: 'env-nope',
    moduleInstance: 'mi-nope',
    logSource: 'app-nope',
    deploymentResource: 'dr-nope',
    certificate: 'cert-nope',
    category: '00000000-0000-4000-8000-000000000000',
    apiKey: 'key0000000000000000',
  },
} as const;

export const REGION = 'us-east-1';
/** Both accounts log into a group and streams of these same names. */
export const LOG_GROUP = '/shared/app';
export const STREAM_PREFIX = 'web/';
/** A separate group for the ingest route, so that its writes never change what the stream rows read. */
export const INGEST_GROUP = '/matrix/ingest';
export const WINDOW = { startTime: '2024-01-01T00:00:00.000Z', endTime: '2024-01-02T00:00:00.000Z' } as const;
const T0 = Date.UTC(2024, 0, 1, 12);

const taskArnOf = (org: Org) => `arn:aws:ecs:${REGION}:111122223333:task/cluster/${org.toLowerCase()}0123456789`;

function taskSnapshot(org: Org): Record<string, unknown> {
  return {
    taskArn: taskArnOf(org),
    containerDefinitions: [
      {
        name: 'app',
        logConfiguration: {
          logDriver: 'awslogs',
          options: { 'awslogs-group': LOG_GROUP, 'awslogs-stream-prefix': 'web' },
        },
      },
    ],
  };
}

function orgObjects(org: Org): Record<string, unknown[]> {
  const id = IDS[org];
  const lower = org.toLowerCase();
  const marker = MARKER[org];
  const taskArn = taskArnOf(org);
  return {
    cloudAccounts: [{ id: id.account, organizationId: id.organization, provider: 'local', region: REGION }],
    projects: [{ id: `prj-${lower}`, organizationId: id.organization, name: `Project ${marker}` }],
    environments: [{ id: id.environment, projectId: `prj-${lower}`, name: 'production' }],
    moduleInstances: [
      {
        id: id.moduleInstance,
        environmentId: id.environment,
        name: `web ${marker}`,
        logSources: [
          { id: id.logSource, kind: 'ui.logs', cloudAccountId: id.account, region: REGION, logGroup: LOG_GROUP },
        ],
      },
    ],
    deploymentResources: [
      {
        id: id.deploymentResource,
        moduleInstanceId: id.moduleInstance,
        type: 'ecs-task',
        cloudAccountId: id.account,
        region: REGION,
        snapshot: taskSnapshot(org),
      },
    ],
    // No validation records and no managed domain: a retry makes no DNS lookup and leaves it pending.
    certificates: [
      {
        id: id.certificate,
        moduleInstanceId: id.moduleInstance,
        domainName: `www.${marker}.example`,
        status: 'PENDINGVALIDATION',
      },
    ],
    // Managed by the service: `verified` is checked in the organization's local zone, never through DNS.
    domains: ['www', 'api', 'shop'].map((name) => ({
      id: `d-${lower}-${name}`,
      moduleInstanceId: id.moduleInstance,
      domainName: `${name}.${marker}.example`,
      managedByService: true,
      targetDnsName: `lb.${marker}.example`,
    })),
    // Org B's events are older than org A's (see isolation-matrix.ts, the Last-Event-ID case).
    logEvents: Array.from({ length: 4 }, (_, i) => ({
      cloudAccountId: id.account,
      region: REGION,
      logGroup: LOG_GROUP,
      logStream: i % 2 === 0 ? `web/app/${taskArn.slice(taskArn.lastIndexOf('/') + 1)}` : 'web/1',
      timestamp: T0 + (org === 'A' ? 60_000 : 0) + i * 1000,
      message: `info event ${i} of ${marker}`,
    })),
  };
}

/**
 * Org A objects wired to org B's cloud account: a module instance whose log source, and a deployment
 * resource whose account, is `acct-b`. Reading through them must never reach org B's logs. `berth
 * seed` refuses such links, so the seed writes the instance and `CROSSED_ROWS` the links themselves,
 * as a database written before that check (or by hand) holds them.
 */
export const CROSSED = {
  environment: 'env-a-crossed',
  moduleInstance: 'mi-a-crossed',
  logSource: 'crossed',
  deploymentResource: 'dr-a-crossed',
} as const;

function crossedObjects(): Record<string, unknown[]> {
  return {
    environments: [{ id: CROSSED.environment, projectId: 'prj-a', name: 'crossed' }],
    moduleInstances: [{ id: CROSSED.moduleInstance, environmentId: CROSSED.environment, name: 'crossed' }],
  };
}

/** The crossed links, written with SQL after the seed (see `CROSSED`). */
export const CROSSED_ROWS: SqlStatement[] = [
  {
    text: `insert into log_sources (module_instance_id, id, kind, cloud_account_id, region, log_group)
      values ($1, $2, 'ui.logs', $3, $4, $5)`,
    params: [CROSSED.moduleInstance, CROSSED.logSource, IDS.B.account, REGION, LOG_GROUP],
  },
  {
    text: `insert into deployment_resources (id, module_instance_id, type, cloud_account_id, region, snapshot)
      values ($1, $2, 'ecs-task', $3, $4, $5::jsonb)`,
    // The same task as org B's resource: its streams hold org B's events.
    params: [
      CROSSED.deploymentResource,
      CROSSED.moduleInstance,
      IDS.B.account,
      REGION,
      JSON.stringify(taskSnapshot('B')),
    ],
  },
];

export function isolationWorld(): Record<string, unknown> {
  return mergeWorld(baseWorld(), orgObjects('A'), orgObjects('B'), crossedObjects(), {
    principals: [
      {
        id: 'p-both',
        name: 'Owner of A, viewer of B',
        memberships: [
          { organizationId: ORG_A, role: 'owner' },
          { organizationId: ORG_B, role: 'viewer' },
        ],
        apiKeys: [{ id: 'k-both-b', token: EXTRA_TOKENS.bothScopedB, organizationId: ORG_B }],
      },
      {
        id: 'p-root-scoped',
        name: 'Superadmin with scoped keys',
        superadmin: true,
        apiKeys: [
          { id: 'k-root-a', token: EXTRA_TOKENS.superadminScopedA, organizationId: ORG_A },
          { id: 'k-root-b', token: EXTRA_TOKENS.superadminScopedB, organizationId: ORG_B },
        ],
      },
    ],
  });
}
