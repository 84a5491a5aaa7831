import type { LoadTenant } from './load-world.js';

/**
 * The operations of the load test and their share of the 200 connections. Each request picks a
 * tenant and a principal at random, so the load spreads over every organization and key (no
 * per-principal limit is the point). Every request of the mix is valid: anything but its success
 * status (or a 429, counted apart) is a finding.
 */
export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  token?: string;
  body?: unknown;
}

export interface LoadOperation {
  name: string;
  /** Connections in the full run (they sum to 200). */
  connections: number;
  status: number;
  /** Requests per second over all its connections (probes); absent: each connection sends the next request at once. */
  rate?: number;
  build(tenant: LoadTenant, seq: number, context: LoadContext): LoadRequest;
  /** A problem with a successful response's body, or undefined. */
  check?(body: string): string | undefined;
  /** The client's time limit for this operation, when it is not the run's. */
  timeoutSeconds?: number;
}

export interface LoadContext {
  /** One category id per organization, created before the load. */
  categoryIds: Record<string, string[]>;
  /** A tag that keeps given ids unique across driver runs (warm-up, measurement). */
  runTag: string;
}

/**
 * The client's limit for the operations that wait on DNS (domain list: each domain's records; certificate retry:
 * the validation records, and possibly another attempt's lease, 60 s by design). Lookups time out after 2 s each,
 * and the fake DNS server runs in the test's own process, which gets little CPU while 200 connections keep both
 * cores busy: their tails reached 10–13 s on PostgreSQL while every other operation stayed under 5 s.
 */
const DNS_BOUND_SECONDS = 20;
const HOUR = 3_600_000;
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const reader = (t: LoadTenant) => pick([t.tokens.admin, t.tokens.member, t.tokens.viewer]);
const window = (hours: number) => ({
  startTime: new Date(Date.now() - hours * HOUR).toISOString(),
  endTime: new Date(Date.now() + 60_000).toISOString(),
});

function json(body: string): any {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

const hasData = (body: string) => (json(body)?.data === undefined ? 'no data in the body' : undefined);

function queryRows(body: string): string | undefined {
  const parsed = json(body);
  if (!Array.isArray(parsed?.rows)) return 'no rows array';
  if (parsed.partial !== false) return `partial result: missed ${JSON.stringify(parsed.missedSources)}`;
  return undefined;
}

const logQuery = (name: string, connections: number, limit: number, filter?: unknown): LoadOperation => ({
  name,
  connections,
  status: 200,
  build: (t) => ({
    method: 'POST',
    path: '/cloud/logs/logs-insights',
    token: reader(t),
    body: { ...window(2), environmentId: t.environmentId, limit, ...(filter === undefined ? {} : { filter }) },
  }),
  check: queryRows,
});

export const OPERATIONS: LoadOperation[] = [
  { name: 'healthz', connections: 10, rate: 50, status: 200, build: () => ({ method: 'GET', path: '/healthz' }) },
  {
    name: 'identity providers',
    connections: 24,
    status: 200,
    build: (t) => ({
      method: 'GET',
      path: `/organizations/${t.organizationId}/permitted-identity-providers`,
      token: reader(t),
    }),
    check: hasData,
  },
  {
    name: 'create category',
    connections: 14,
    status: 201,
    build: (t, seq, ctx) => ({
      method: 'POST',
      path: '/module-categories',
      token: t.tokens.admin,
      body: {
        data: {
          givenId: `load-${ctx.runTag}-${seq}`,
          name: `Load ${seq}`,
          sortOrder: seq % 1000,
          description: 'made under load',
        },
      },
    }),
    check: hasData,
  },
  {
    name: 'list categories',
    connections: 18,
    status: 200,
    build: (t) => ({ method: 'GET', path: '/module-categories', token: reader(t) }),
    check: hasData,
  },
  {
    name: 'get category',
    connections: 16,
    status: 200,
    build: (t, _seq, ctx) => ({
      method: 'GET',
      path: `/module-categories/${encodeURIComponent(pick(ctx.categoryIds[t.organizationId]!))}`,
      token: reader(t),
    }),
    check: hasData,
  },
  logQuery('log query limit 20', 16, 20),
  logQuery('log query limit 200', 10, 200),
  logQuery('log query limit 1000', 6, 1000),
  logQuery('log query filtered', 12, 500, {
    kind: 'and',
    nodes: [
      { kind: 'level', levels: ['WARN', 'ERROR'] },
      { kind: 'not', node: { kind: 'text', op: 'contains', value: 'cache' } },
      {
        kind: 'or',
        nodes: [
          { kind: 'field', path: 'code', op: 'eq', value: 'card_declined' },
          { kind: 'text', op: 'regex', value: 'took [0-9]+ ms' },
        ],
      },
    ],
  }),
  {
    name: 'log stream (no tail)',
    connections: 10,
    status: 200,
    build: (t) => {
      const q = new URLSearchParams({
        accountId: t.accountId,
        logGroups: pick(t.logGroups),
        logStreamPrefix: 'app/',
        region: t.region,
        startTime: new Date(Date.now() - 2 * HOUR).toISOString(),
        tail: 'false',
      });
      return { method: 'GET', path: `/cloud/logs/stream?${q}`, token: reader(t) };
    },
    check: (body) =>
      body.includes('event: error')
        ? 'event: error in the stream'
        : body.includes('"isFinal":true')
          ? undefined
          : 'no final message',
  },
  {
    name: 'ingest',
    connections: 16,
    status: 202,
    build: (t, seq) => ({
      method: 'POST',
      path: '/cloud/logs/local/events',
      token: t.tokens.admin,
      body: {
        accountId: t.accountId,
        region: t.region,
        logGroup: pick(t.logGroups),
        logStream: `app/load-${seq % 4}`,
        events: Array.from({ length: 1 + (seq % 8) }, (_, i) => ({
          message:
            i % 3 === 0 ? JSON.stringify({ level: 'warn', msg: 'ingested', seq, i }) : `INFO ingested ${seq}.${i}`,
          timestamp: Date.now(),
        })),
      },
    }),
    check: (body) => (typeof json(body)?.data?.accepted === 'number' ? undefined : 'no data.accepted'),
  },
  {
    name: 'domain list',
    connections: 18,
    status: 200,
    timeoutSeconds: DNS_BOUND_SECONDS,
    build: (t, seq) => ({
      method: 'GET',
      path: `/domains?moduleInstanceId=${t.moduleInstanceIds[0]}&limit=${seq % 2 === 0 ? 3 : 25}`,
      token: reader(t),
    }),
    check: hasData,
  },
  {
    name: 'name availability',
    connections: 18,
    status: 200,
    build: (t, seq) => {
      const name = pick([
        pick(t.domainNames),
        `new-${seq}.fresh-${t.organizationId}.example`,
        `x.apps.tenant00${seq % 10}.example`,
        `svc-${seq}.berth.dev`,
        `*.w${seq}.example`,
      ]);
      return { method: 'GET', path: `/domains/name-availability?${new URLSearchParams({ name })}`, token: reader(t) };
    },
    check: (body) => (typeof json(body)?.data?.available === 'boolean' ? undefined : 'no data.available'),
  },
  {
    name: 'certificate retry',
    connections: 10,
    status: 200,
    timeoutSeconds: DNS_BOUND_SECONDS,
    build: (t) => ({
      method: 'POST',
      path: `/managed-certificates/${pick(t.pendingCertificateIds)}/retry-validation`,
      token: t.tokens.admin,
    }),
    check: (body) =>
      json(body)?.data?.status === 'PENDINGVALIDATION'
        ? undefined
        : `status ${JSON.stringify(json(body)?.data?.status)}`,
  },
  { name: 'readyz', connections: 2, rate: 10, status: 200, build: () => ({ method: 'GET', path: '/readyz' }) },
];
