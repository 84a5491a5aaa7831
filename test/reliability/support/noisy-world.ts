// The noisy-neighbour test's world (issue 11): tenant A, an organization with one read/write key and one big log group
// (≥ 100,000 events), and tenant B, another organization with its own key and a small log group. Deterministic from
// its sizes and the clock it is given, so the test and the load driver (another process) agree on ids and windows.

export const REGION = 'eu-west-1';
/** A's big group's streams: the history streams select them by this prefix. */
export const STREAM_PREFIX = 'app/';
const STREAMS = ['app/web-1', 'app/web-2', 'app/worker-1', 'app/worker-2'];

export interface NoisyTenant {
  organizationId: string;
  token: string;
  accountId: string;
  environmentId: string;
  moduleInstanceId: string;
  logGroup: string;
}

export interface NoisyWorld {
  fixture: Record<string, unknown>;
  a: NoisyTenant;
  b: NoisyTenant;
  /** The window every seeded event lies in (epoch ms); ingest during the test writes at "now", after it. */
  window: { startMs: number; endMs: number };
}

function tenant(name: 'a' | 'b', role: 'admin' | 'member'): NoisyTenant {
  return {
    organizationId: `noisy-${name}`,
    token: `berth_k-noisy-${name}_noisy-${name}-${role}-secret-0000000000`,
    accountId: `acct-noisy-${name}`,
    environmentId: `env-noisy-${name}`,
    moduleInstanceId: `mi-noisy-${name}`,
    logGroup: `/noisy/${name}/${name === 'a' ? 'big' : 'small'}`,
  };
}

/**
 * Messages as services write them: half JSON objects (levels and fields a `field` filter reads), half text lines with
 * a leading level word, ~90–140 characters each. Nothing in them matches the heavy test's regexes (`zq`, 40 digits…).
 */
export function noisyMessage(i: number): string {
  switch (i % 6) {
    case 0:
      return JSON.stringify({
        level: 'info',
        msg: 'order placed',
        orderId: `o-${i}`,
        amount: (i * 37) % 500,
        user: { id: `u-${i % 977}`, plan: i % 3 === 0 ? 'pro' : 'free' },
      });
    case 1:
      return `WARN slow query on orders took ${100 + (i % 900)} ms (rows=${i % 1000}, table=orders_${i % 7})`;
    case 2:
      return JSON.stringify({
        level: 'error',
        msg: 'payment failed',
        orderId: `o-${i}`,
        code: 'card_declined',
        attempt: i % 4,
      });
    case 3:
      return `INFO GET /api/orders/${i} 200 ${i % 40} ms ua="Mozilla/5.0 (X11; Linux x86_64)" ref=/cart`;
    case 4:
      return JSON.stringify({ level: 'debug', msg: 'cache lookup', key: `cart:${i % 5000}`, hit: i % 2 === 0 });
    default:
      return `ERROR worker job ${i} failed: timeout after ${i % 30} s (queue=emails, retry=${i % 5})`;
  }
}

/** The fixture holds B's events; A's many are ingested through the API by the test (`seedEvents`). */
export function noisyWorld(eventsB: number, now: number): NoisyWorld {
  const a = tenant('a', 'admin');
  const b = tenant('b', 'member');
  // Seeded events span the two hours before the test starts.
  const window = { startMs: now - 2 * 3_600_000, endMs: now - 1_000 };
  const fixture = {
    organizations: [
      { id: a.organizationId, name: 'Noisy tenant A', permittedIdentityProviders: ['EMAIL_PASSWORD'] },
      { id: b.organizationId, name: 'Quiet tenant B', permittedIdentityProviders: ['SSO_BROKER', 'SOCIAL_1'] },
    ],
    principals: [
      {
        id: 'p-noisy-a',
        name: 'Noisy A admin',
        memberships: [{ organizationId: a.organizationId, role: 'admin' }],
        apiKeys: [{ id: 'k-noisy-a', token: a.token, organizationId: a.organizationId }],
      },
      {
        id: 'p-noisy-b',
        name: 'Quiet B member',
        memberships: [{ organizationId: b.organizationId, role: 'member' }],
        apiKeys: [{ id: 'k-noisy-b', token: b.token, organizationId: b.organizationId }],
      },
    ],
    cloudAccounts: [a, b].map((t) => ({
      id: t.accountId,
      organizationId: t.organizationId,
      provider: 'local',
      region: REGION,
    })),
    projects: [a, b].map((t) => ({ id: `prj-${t.organizationId}`, organizationId: t.organizationId, name: 'Shop' })),
    environments: [a, b].map((t) => ({ id: t.environmentId, projectId: `prj-${t.organizationId}`, name: 'prod' })),
    moduleInstances: [a, b].map((t) => ({
      id: t.moduleInstanceId,
      environmentId: t.environmentId,
      name: 'web',
      logSources: [{ id: 'app', kind: 'ui.logs', cloudAccountId: t.accountId, region: REGION, logGroup: t.logGroup }],
    })),
    logEvents: events(b, eventsB, window),
  };
  return { fixture, a, b, window };
}

/**
 * Events `from` … `from + count - 1` of `total` spread evenly over the window: short JSON and text lines with levels
 * (≤ 64 characters, so 10,000 of them fit one 1 MiB ingest request).
 */
export function seedEvents(from: number, count: number, total: number, window: { startMs: number; endMs: number }) {
  const span = window.endMs - window.startMs;
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    const message =
      i % 2 === 0
        ? JSON.stringify({
            level: ['info', 'error', 'debug'][i % 3],
            msg: 'order',
            id: i,
            user: { id: `u-${i % 977}` },
          })
        : `${['INFO', 'WARN', 'ERROR'][i % 3]} GET /api/orders/${i} 200 ${i % 40} ms`;
    return { message, timestamp: window.startMs + Math.floor((i * span) / total) };
  });
}

function events(t: NoisyTenant, count: number, window: { startMs: number; endMs: number }) {
  const span = window.endMs - window.startMs;
  return Array.from({ length: count }, (_, i) => ({
    cloudAccountId: t.accountId,
    region: REGION,
    logGroup: t.logGroup,
    logStream: STREAMS[i % STREAMS.length]!,
    timestamp: window.startMs + Math.floor((i * span) / count),
    message: noisyMessage(i),
  }));
}
