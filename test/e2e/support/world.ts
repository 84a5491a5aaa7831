// The end-to-end tests' world: org A of the standard test world with a shop project (two environments), module
// instances whose `ui.logs` sources are on a `local` account, an ecs-task deployment resource, and, in staging, a
// source on an `aws` account whose endpoint refuses every connection (its log group is always missed: `partial`).
// Org B has a group of the same name with its own secret rows (they must never show). Events go in through the
// public ingest endpoint, timed relative to the moment of seeding so they fall in "the last 15 minutes".
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { expect } from 'vitest';
import type { Config } from '../../../src/config.js';
import type { SignInSettings } from '../../../src/core/schemas/sign-in-config.js';
import { createServices } from '../../../src/services/index.js';
import type { Store } from '../../../src/store/db.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { FAKE_CREDENTIALS } from '../../support/fake-aws/index.js';
import { logSource } from '../../support/log-source.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../../support/world.js';
import { builtUiDir } from './browser.js';

export { ORG_A, ORG_B, TOKENS };

export const TASK_ID = '0123456789abcdef';
export const GROUPS = {
  web: '/shop/web',
  access: '/shop/access',
  worker: '/shop/worker',
  task: '/ecs/shop',
  api: '/shop/api',
  dead: '/aws/legacy',
  orgB: '/shop/web',
} as const;
export const SOURCE_KEYS = {
  web: 'mi-web::app',
  access: 'mi-web::access',
  worker: 'mi-worker::jobs',
} as const;
export const ORG_B_SECRET = 'org b secret';

export function e2eWorld(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'local-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      { id: 'local-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
      // Nothing listens on port 1: every call fails at once.
      { id: 'aws-dead', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: 'http://127.0.0.1:1' },
    ],
    projects: [
      { id: 'proj-shop', organizationId: ORG_A, name: 'shop' },
      { id: 'proj-b', organizationId: ORG_B, name: 'b-shop' },
    ],
    environments: [
      { id: 'env-prod', projectId: 'proj-shop', name: 'production' },
      { id: 'env-staging', projectId: 'proj-shop', name: 'staging' },
      { id: 'env-b', projectId: 'proj-b', name: 'production' },
    ],
    moduleInstances: [
      {
        id: 'mi-web',
        environmentId: 'env-prod',
        name: 'web',
        logSources: [logSource('app', 'local-a', GROUPS.web), logSource('access', 'local-a', GROUPS.access)],
      },
      {
        id: 'mi-worker',
        environmentId: 'env-prod',
        name: 'worker',
        logSources: [logSource('jobs', 'local-a', GROUPS.worker, { logStreamPrefix: 'jobs/' })],
      },
      {
        id: 'mi-api',
        environmentId: 'env-staging',
        name: 'api',
        logSources: [logSource('app', 'local-a', GROUPS.api)],
      },
      {
        id: 'mi-legacy',
        environmentId: 'env-staging',
        name: 'legacy',
        logSources: [logSource('old', 'aws-dead', GROUPS.dead)],
      },
      { id: 'mi-b', environmentId: 'env-b', name: 'web', logSources: [logSource('app', 'local-b', GROUPS.orgB)] },
    ],
    deploymentResources: [
      {
        id: 'dr-task',
        moduleInstanceId: 'mi-web',
        type: 'ecs-task',
        cloudAccountId: 'local-a',
        region: 'us-east-1',
        snapshot: {
          taskArn: `arn:aws:ecs:us-east-1:123456789012:task/shop/${TASK_ID}`,
          containerDefinitions: [
            {
              name: 'web',
              logConfiguration: {
                logDriver: 'awslogs',
                options: { 'awslogs-group': GROUPS.task, 'awslogs-stream-prefix': 'ecs' },
              },
            },
          ],
        },
      },
    ],
  });
}

/** A running Berth on this world, serving the page built from the current sources; the aws account fails fast. */
export async function startE2eApp(
  config: Partial<Config> = {},
  options: { world?: Record<string, unknown>; signIn?: (config: Config) => SignInSettings } = {},
): Promise<TestApp> {
  const uiDir = await builtUiDir();
  const t = await startTestApp({
    fixture: options.world ?? e2eWorld(),
    config: {
      UI_DIR: uiDir,
      STREAM_POLL_INTERVAL_MS: 200,
      STREAM_KEEPALIVE_MS: 1_000,
      AWS_CALL_TIMEOUT_MS: 2_000,
      ...config,
    },
    services: (store: Store, c: Config) =>
      createServices(store, c, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(1, 5) } },
        ...(options.signIn === undefined ? {} : { signIn: options.signIn(c) }),
      }),
  });
  // People reach it at the address it listens on (what PUBLIC_URL defaults to).
  t.services.signIn.useListeningAddress(t.url);
  return t;
}

export interface IngestTarget {
  accountId: string;
  logGroup: string;
  logStream: string;
  region?: string;
}

export interface SeedEvent {
  target: IngestTarget;
  message: string;
  timestamp: number;
}

/** POST /cloud/logs/local/events, grouped by stream, 2,000 events a request. */
export async function ingest(t: TestApp, events: SeedEvent[], token: string = TOKENS.admin): Promise<void> {
  const byStream = new Map<string, SeedEvent[]>();
  for (const e of events) {
    const k = JSON.stringify(e.target);
    byStream.set(k, [...(byStream.get(k) ?? []), e]);
  }
  for (const list of byStream.values()) {
    const { accountId, logGroup, logStream, region = 'us-east-1' } = list[0]!.target;
    for (let i = 0; i < list.length; i += 2_000) {
      const chunk = list.slice(i, i + 2_000);
      const res = await t.request('POST', '/cloud/logs/local/events', {
        token,
        body: {
          accountId,
          region,
          logGroup,
          logStream,
          events: chunk.map((e) => ({ message: e.message, timestamp: e.timestamp })),
        },
      });
      expect(res.status, res.text).toBe(202);
      expect(res.body.data.accepted).toBe(chunk.length);
    }
  }
}

/** The n-th line of a service: mixed levels, a third of them JSON; `#n` makes every line unique. */
export function line(service: string, n: number): string {
  switch (n % 10) {
    case 0:
    case 1:
    case 2:
      return `INFO ${service} GET /products/${n} 200 in ${(n * 7) % 400} ms #${n}`;
    case 3:
      return `DEBUG ${service} cache hit key=product:${n} #${n}`;
    case 4:
      return JSON.stringify({ level: 'info', msg: `${service} order placed`, seq: n, order: { id: n, total: n % 97 } });
    case 5:
      return JSON.stringify({ level: 'warn', msg: `${service} slow request`, seq: n, status: 503, path: '/cart' });
    case 6:
      return `ERROR ${service} payment declined for order ${n} #${n}`;
    case 7:
      return JSON.stringify({
        level: 'error',
        msg: `${service} upstream timeout`,
        seq: n,
        status: 504,
        user: { id: n % 50 },
      });
    case 8:
      return `WARN ${service} retrying job ${n} #${n}`;
    default:
      return `TRACE ${service} tick #${n}`;
  }
}

export interface Seeded {
  /** The moment the events were placed around (epoch ms). */
  now: number;
  /** Rows of env-prod (all its sources) in the last 12 minutes. */
  prodRows: number;
  /** Rows of the web app source alone. */
  webRows: number;
  taskRows: number;
  stagingRows: number;
}

const SPAN_MS = 11 * 60_000;

/**
 * Env-prod: 1,800 web, 600 access and 300 worker rows in the 11 minutes up to 30 s ago (2,700 in all, three pages
 * of "older"); 31 of them share the millisecond where the first page of the environment would end, so a page must
 * cut before it. Plus the ecs task's rows, staging's rows, and org B's secret rows at the same times.
 */
export async function seed(t: TestApp, now = Date.now()): Promise<Seeded> {
  const end = now - 30_000;
  const spread = (target: IngestTarget, service: string, count: number, offset = 0): SeedEvent[] =>
    Array.from({ length: count }, (_, i) => ({
      target,
      message: line(service, i + offset),
      timestamp: end - SPAN_MS + Math.floor(((i + 0.5) * SPAN_MS) / count),
    }));
  const prod = [
    ...spread({ accountId: 'local-a', logGroup: GROUPS.web, logStream: 'web/1' }, 'web', 1_200),
    ...spread({ accountId: 'local-a', logGroup: GROUPS.web, logStream: 'web/2' }, 'web', 600, 1_200),
    ...spread({ accountId: 'local-a', logGroup: GROUPS.access, logStream: 'access/1' }, 'access', 600),
    ...spread({ accountId: 'local-a', logGroup: GROUPS.worker, logStream: 'jobs/1' }, 'worker', 300),
  ];
  // A burst in one millisecond across the environment's first page boundary (newest first, 1,000 a page).
  const order = [...prod].sort((a, b) => b.timestamp - a.timestamp);
  const edge = order[1_000]!.timestamp;
  for (let i = 985; i <= 1_015; i++) order[i]!.timestamp = edge;
  const others = [
    ...spread({ accountId: 'local-a', logGroup: GROUPS.task, logStream: `ecs/web/${TASK_ID}` }, 'task', 60),
    // Another task's stream in the same group: not the resource's.
    ...spread({ accountId: 'local-a', logGroup: GROUPS.task, logStream: 'ecs/web/fedcba9876543210' }, 'other-task', 20),
    ...spread({ accountId: 'local-a', logGroup: GROUPS.api, logStream: 'api/1' }, 'api', 120),
  ];
  await ingest(t, [...prod, ...others]);
  await ingest(
    t,
    Array.from({ length: 50 }, (_, i) => ({
      target: { accountId: 'local-b', logGroup: GROUPS.orgB, logStream: 'web/1' },
      message: `ERROR ${ORG_B_SECRET} ${i}`,
      timestamp: end - i * 1_000,
    })),
    TOKENS.otherAdmin,
  );
  return { now, prodRows: prod.length, webRows: 1_800, taskRows: 60, stagingRows: 120 };
}
