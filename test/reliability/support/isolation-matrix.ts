// The authorization matrix: every route × every kind of caller, against org A's objects.
import { TOKENS } from '../../support/world.js';
import { type Credential, cell, send, type Http, type Outcome, type Probe } from './isolation-http.js';
import {
  EXTRA_TOKENS,
  IDS,
  SESSIONS,
  INGEST_GROUP,
  LOG_GROUP,
  REGION,
  STREAM_PREFIX,
  WINDOW,
  type Org,
} from './isolation-world.js';

export type Role = 'owner' | 'admin' | 'member' | 'viewer';

export interface CallerKind {
  key: string;
  /** Column header. */
  label: string;
  /** What the caller is, for the document. */
  who: string;
  /** The Authorization header sent, if any. */
  authorization?: string;
  /** A session cookie sent instead (from Berth's own origin). */
  cookie?: string;
  /** Organizations the caller belongs to whose permitted list lacks its session's provider. */
  notPermittedIn?: Org[];
  /** Unauthenticated callers: the 401 code docs/design.md#identity-tokens-and-permissions gives them. */
  rejected?: 'auth:token:missing' | 'auth:token:invalid';
  /**
   * The role the key gives in each organization (after its scope): what docs/design.md#identity-tokens-and-permissions
   * decides by.
   */
  roles?: Partial<Record<Org, Role>>;
  /** Where `POST /module-categories` creates for this caller: the key's organization, or a global category. */
  createsIn?: Org | 'global';
}

const bearer = (token: string) => `Bearer ${token}`;

export const UNAUTHENTICATED: CallerKind[] = [
  { key: 'none', label: 'no token', who: 'no `Authorization` header', rejected: 'auth:token:missing' },
  {
    key: 'malformed',
    label: 'malformed',
    who: '`Authorization: Bearer not a token` (not one token68)',
    authorization: 'Bearer not a token',
    rejected: 'auth:token:invalid',
  },
  {
    key: 'unknown-key',
    label: 'unknown key',
    who: 'well-formed `berth_<keyId>_<secret>` of a key id that does not exist',
    authorization: bearer('berth_k-nope_nope-secret-00000000000000'),
    rejected: 'auth:token:invalid',
  },
  {
    key: 'wrong-secret',
    label: 'wrong secret',
    who: "the owner's key id (`k-owner`) with a wrong secret",
    authorization: bearer('berth_k-owner_wrong-secret-000000000000'),
    rejected: 'auth:token:invalid',
  },
  {
    key: 'expired',
    label: 'expired',
    who: 'a key of an org A owner that expired',
    authorization: bearer(TOKENS.expired),
    rejected: 'auth:token:invalid',
  },
  {
    key: 'revoked',
    label: 'revoked',
    who: 'a key of an org A owner that was revoked',
    authorization: bearer(TOKENS.revoked),
    rejected: 'auth:token:invalid',
  },
];

export const AUTHENTICATED: CallerKind[] = [
  {
    key: 'viewer',
    label: 'viewer',
    who: 'viewer of org A, key scoped to org A',
    authorization: bearer(TOKENS.viewer),
    roles: { A: 'viewer' },
    createsIn: 'A',
  },
  {
    key: 'member',
    label: 'member',
    who: 'member of org A, unscoped key',
    authorization: bearer(TOKENS.member),
    roles: { A: 'member' },
    createsIn: 'A',
  },
  {
    key: 'admin',
    label: 'admin',
    who: 'admin of org A, key scoped to org A',
    authorization: bearer(TOKENS.admin),
    roles: { A: 'admin' },
    createsIn: 'A',
  },
  {
    key: 'owner',
    label: 'owner',
    who: 'owner of org A, key scoped to org A',
    authorization: bearer(TOKENS.owner),
    roles: { A: 'owner' },
    createsIn: 'A',
  },
  {
    key: 'outsider',
    label: 'admin of B',
    who: 'admin of org B only, key scoped to org B',
    authorization: bearer(TOKENS.otherAdmin),
    roles: { B: 'admin' },
    createsIn: 'B',
  },
  {
    key: 'scoped-other',
    label: 'key scoped to B',
    who: 'owner of org A and viewer of org B, key scoped to org B',
    authorization: bearer(EXTRA_TOKENS.bothScopedB),
    roles: { B: 'viewer' },
    createsIn: 'B',
  },
  {
    key: 'superadmin',
    label: 'superadmin',
    who: 'superadmin, unscoped key',
    authorization: bearer(TOKENS.superadmin),
    roles: { A: 'owner', B: 'owner' },
    createsIn: 'global',
  },
  {
    key: 'superadmin-a',
    label: 'superadmin, key scoped to A',
    who: 'superadmin, key scoped to org A',
    authorization: bearer(EXTRA_TOKENS.superadminScopedA),
    roles: { A: 'owner' },
    createsIn: 'A',
  },
  {
    key: 'superadmin-b',
    label: 'superadmin, key scoped to B',
    who: 'superadmin, key scoped to org B',
    authorization: bearer(EXTRA_TOKENS.superadminScopedB),
    roles: { B: 'owner' },
    createsIn: 'B',
  },
  {
    key: 'session',
    label: 'session',
    who: 'owner of org A, signed in through SSO_BROKER (which org A permits): the session cookie',
    cookie: `berth_session=${SESSIONS.permitted}`,
    roles: { A: 'owner' },
    createsIn: 'A',
  },
  {
    key: 'session-not-permitted',
    label: 'session, method not permitted',
    who: 'member of org A, signed in through WORKFORCE_1 (which org A does not permit): the session cookie',
    cookie: `berth_session=${SESSIONS.notPermitted}`,
    notPermittedIn: ['A'],
    createsIn: 'A',
  },
];

/** What a matrix caller sends: its Authorization header, or its session cookie. */
export const credentialOf = (caller: CallerKind): Credential =>
  caller.cookie !== undefined ? { cookie: caller.cookie } : caller.authorization;

export const CALLERS = [...UNAUTHENTICATED, ...AUTHENTICATED];

/** Values minted through the API before the matrix runs (ids of categories, cursors, stream positions). */
export interface Minted {
  category: Record<Org, string>;
  cursor: Record<Org, string>;
  /** The `id:` of the first message of each organization's stream (a position after its first event). */
  streamId: Record<Org, string>;
  /** A key scoped to each organization, of a viewer there: any admin of it may revoke it. */
  apiKey: Record<Org, string>;
}

/** How docs/design.md#identity-tokens-and-permissions decides a route. */
type Access =
  | { kind: 'public' }
  /** Any membership of org A reads; another organization's caller gets the not-found answer. */
  | { kind: 'read'; hidden: string }
  /** Admins and owners of org A write; other members get 403; non-members get the not-found answer. */
  | { kind: 'write'; hidden: string }
  /** The identity-provider endpoint: members read, everyone else 403 (the endpoint has no 404). */
  | { kind: 'identity-providers' }
  /** Creates in the key's organization: admins and owners there (or an unscoped superadmin, globally). */
  | { kind: 'create' }
  /** Key management of org A: admins and owners there; everyone else 403, as the identity-provider endpoint answers. */
  | { kind: 'manage-keys' }
  /** About the caller itself (`GET /me`): every valid token gets its own answer. */
  | { kind: 'self' }
  /** A member's identities in org A: admins and owners there; other members 403; strangers the not-found answer. */
  | { kind: 'manage-members'; hidden: string };

export interface Row {
  key: string;
  /** `METHOD /path`, as the spec names it. */
  route: string;
  /** Which selector or variant this row exercises. */
  variant: string;
  access: Access;
  /** The status of a successful answer. */
  success: number;
  probe(minted: Minted, seq: number): Probe;
}

const NAME = 'fresh.matrix.example';

/** GET /cloud/logs/stream of an account's shared group, history only (the stream then ends by itself). */
export function streamPath(account: string): string {
  const q = new URLSearchParams({ accountId: account, logGroups: LOG_GROUP, logStreamPrefix: STREAM_PREFIX });
  return `/cloud/logs/stream?${q}`;
}

const query = (selector: Record<string, unknown>): Probe => ({
  method: 'POST',
  path: '/cloud/logs/logs-insights',
  body: { ...WINDOW, ...selector },
});
const histogram = (selector: Record<string, unknown>): Probe => ({
  method: 'POST',
  path: '/cloud/logs/logs-insights/histogram',
  body: { ...WINDOW, ...selector },
});
const A = IDS.A;

export const ROWS: Row[] = [
  {
    key: 'me',
    route: 'GET /me',
    variant: "the caller's own identity",
    access: { kind: 'self' },
    success: 200,
    probe: () => ({ method: 'GET', path: '/me' }),
  },
  {
    key: 'me-identities',
    route: 'GET /me/identities',
    variant: "the caller's own identities",
    access: { kind: 'self' },
    success: 200,
    probe: () => ({ method: 'GET', path: '/me/identities' }),
  },
  {
    key: 'member-identities',
    route: 'GET /organizations/{organizationId}/members/{principalId}/identities',
    variant: "org A's viewer",
    access: { kind: 'manage-members', hidden: 'auth:identity:not-found' },
    success: 200,
    probe: () => ({ method: 'GET', path: `/organizations/${A.organization}/members/p-viewer/identities` }),
  },
  {
    key: 'idp',
    route: 'GET /organizations/{id}/permitted-identity-providers',
    variant: 'org A',
    access: { kind: 'identity-providers' },
    success: 200,
    probe: () => ({ method: 'GET', path: `/organizations/${A.organization}/permitted-identity-providers` }),
  },
  {
    key: 'keys-create',
    route: 'POST /organizations/{organizationId}/api-keys',
    variant: 'org A, for the caller',
    access: { kind: 'manage-keys' },
    success: 201,
    probe: (_m, seq) => ({
      method: 'POST',
      path: `/organizations/${A.organization}/api-keys`,
      body: { data: { name: `matrix ${seq}` } },
    }),
  },
  {
    key: 'keys-list',
    route: 'GET /organizations/{organizationId}/api-keys',
    variant: 'org A',
    access: { kind: 'manage-keys' },
    success: 200,
    probe: () => ({ method: 'GET', path: `/organizations/${A.organization}/api-keys` }),
  },
  {
    key: 'keys-revoke',
    route: 'DELETE /organizations/{organizationId}/api-keys/{keyId}',
    variant: "org A's key of a viewer (revoking is idempotent)",
    access: { kind: 'manage-keys' },
    success: 204,
    probe: (m) => ({ method: 'DELETE', path: `/organizations/${A.organization}/api-keys/${m.apiKey.A}` }),
  },
  {
    key: 'category-create',
    route: 'POST /module-categories',
    variant: "in the key's organization",
    access: { kind: 'create' },
    success: 201,
    probe: (_m, seq) => ({
      method: 'POST',
      path: '/module-categories',
      body: { data: { givenId: `matrix-${seq}`, name: `Matrix ${seq}`, sortOrder: seq } },
    }),
  },
  {
    key: 'category-list',
    route: 'GET /module-categories',
    variant: '',
    access: { kind: 'read', hidden: '' },
    success: 200,
    probe: () => ({ method: 'GET', path: '/module-categories' }),
  },
  {
    key: 'category-get',
    route: 'GET /module-categories/{id}',
    variant: "org A's category",
    access: { kind: 'read', hidden: 'module-categories:category:not-found' },
    success: 200,
    probe: (m) => ({ method: 'GET', path: `/module-categories/${m.category.A}` }),
  },
  {
    key: 'query-environment',
    route: 'POST /cloud/logs/logs-insights',
    variant: '`environmentId`',
    access: { kind: 'read', hidden: 'logs:environment:not-found' },
    success: 200,
    probe: () => query({ environmentId: A.environment }),
  },
  {
    key: 'query-instances',
    route: 'POST /cloud/logs/logs-insights',
    variant: '`moduleInstanceIds`',
    access: { kind: 'read', hidden: 'logs:module-instance:not-found' },
    success: 200,
    probe: () => query({ moduleInstanceIds: [A.moduleInstance] }),
  },
  {
    key: 'query-keys',
    route: 'POST /cloud/logs/logs-insights',
    variant: '`logSourceKeys`',
    access: { kind: 'read', hidden: 'logs:module-instance:not-found' },
    success: 200,
    probe: () => query({ logSourceKeys: [`${A.moduleInstance}::${A.logSource}`] }),
  },
  {
    key: 'query-resource',
    route: 'POST /cloud/logs/logs-insights',
    variant: '`deploymentResourceId`',
    access: { kind: 'read', hidden: 'logs:deployment-resource:not-found' },
    success: 200,
    probe: () => query({ deploymentResourceId: A.deploymentResource }),
  },
  {
    key: 'histogram-environment',
    route: 'POST /cloud/logs/logs-insights/histogram',
    variant: '`environmentId`',
    access: { kind: 'read', hidden: 'logs:environment:not-found' },
    success: 200,
    probe: () => histogram({ environmentId: A.environment }),
  },
  {
    key: 'histogram-instances',
    route: 'POST /cloud/logs/logs-insights/histogram',
    variant: '`moduleInstanceIds`',
    access: { kind: 'read', hidden: 'logs:module-instance:not-found' },
    success: 200,
    probe: () => histogram({ moduleInstanceIds: [A.moduleInstance] }),
  },
  {
    key: 'histogram-keys',
    route: 'POST /cloud/logs/logs-insights/histogram',
    variant: '`logSourceKeys`',
    access: { kind: 'read', hidden: 'logs:module-instance:not-found' },
    success: 200,
    probe: () => histogram({ logSourceKeys: [`${A.moduleInstance}::${A.logSource}`] }),
  },
  {
    key: 'histogram-resource',
    route: 'POST /cloud/logs/logs-insights/histogram',
    variant: '`deploymentResourceId`',
    access: { kind: 'read', hidden: 'logs:deployment-resource:not-found' },
    success: 200,
    probe: () => histogram({ deploymentResourceId: A.deploymentResource }),
  },
  {
    key: 'catalog',
    route: 'GET /organizations/{id}/log-catalog',
    variant: 'org A',
    access: { kind: 'read', hidden: 'logs:organization:not-found' },
    success: 200,
    probe: () => ({ method: 'GET', path: `/organizations/${A.organization}/log-catalog` }),
  },
  {
    key: 'stream',
    route: 'GET /cloud/logs/stream',
    variant: '`accountId`',
    access: { kind: 'read', hidden: 'logs:account:not-found' },
    success: 200,
    probe: () => ({ method: 'GET', path: streamPath(A.account) }),
  },
  {
    key: 'stream-resume',
    route: 'GET /cloud/logs/stream',
    variant: '`accountId` and `Last-Event-ID`',
    access: { kind: 'read', hidden: 'logs:account:not-found' },
    success: 200,
    probe: (m) => ({ method: 'GET', path: streamPath(A.account), headers: { 'last-event-id': m.streamId.A } }),
  },
  {
    key: 'ingest',
    route: 'POST /cloud/logs/local/events',
    variant: "org A's `local` account",
    access: { kind: 'write', hidden: 'logs:account:not-found' },
    success: 202,
    probe: () => ({
      method: 'POST',
      path: '/cloud/logs/local/events',
      body: {
        accountId: A.account,
        region: REGION,
        logGroup: INGEST_GROUP,
        logStream: 'matrix',
        events: [{ message: 'matrix', timestamp: Date.parse(WINDOW.startTime) }],
      },
    }),
  },
  {
    key: 'domains',
    route: 'GET /domains',
    variant: '`moduleInstanceId`',
    access: { kind: 'read', hidden: 'domains:module-instance:not-found' },
    success: 200,
    probe: () => ({ method: 'GET', path: `/domains?moduleInstanceId=${A.moduleInstance}&limit=1` }),
  },
  {
    key: 'domains-cursor',
    route: 'GET /domains',
    variant: '`moduleInstanceId` and `cursor`',
    access: { kind: 'read', hidden: 'domains:module-instance:not-found' },
    success: 200,
    probe: (m) => ({
      method: 'GET',
      path: `/domains?moduleInstanceId=${A.moduleInstance}&limit=1&cursor=${encodeURIComponent(m.cursor.A)}`,
    }),
  },
  {
    key: 'name-availability',
    route: 'GET /domains/name-availability',
    variant: '`name` and `moduleInstanceId`',
    access: { kind: 'read', hidden: 'domains:module-instance:not-found' },
    success: 200,
    probe: () => ({
      method: 'GET',
      path: `/domains/name-availability?name=${NAME}&moduleInstanceId=${A.moduleInstance}`,
    }),
  },
  {
    key: 'retry',
    route: 'POST /managed-certificates/{id}/retry-validation',
    variant: "org A's pending certificate",
    access: { kind: 'write', hidden: 'certificates:certificate:not-found' },
    success: 200,
    probe: () => ({ method: 'POST', path: `/managed-certificates/${A.certificate}/retry-validation` }),
  },
  ...['/healthz', '/readyz', '/metrics', '/openapi.json', '/auth/providers', '/auth/session'].map(
    (path): Row => ({
      key: path.slice(1),
      route: `GET ${path}`,
      variant: 'public',
      access: { kind: 'public' },
      success: 200,
      probe: () => ({ method: 'GET', path }),
    }),
  ),
];

/**
 * The answer docs/design.md#identity-tokens-and-permissions prescribes for a caller on a row: the model the observed
 * matrix must match, so a regenerated document cannot quietly bless a hole.
 */
export function prescribed(row: Row, caller: CallerKind): string {
  const { access } = row;
  if (access.kind === 'public') return String(row.success);
  if (caller.rejected !== undefined) return `401 ${caller.rejected}`;
  const roleInA = caller.roles?.A;
  // A session is refused wherever org A is decided on, except on lists and on the caller itself.
  if (caller.notPermittedIn?.includes('A')) {
    const listOrSelf = access.kind === 'self' || (access.kind === 'read' && access.hidden === '');
    if (!listOrSelf) return '403 auth:identity-provider:not-permitted';
  }
  switch (access.kind) {
    case 'self':
      return String(row.success);
    case 'identity-providers':
      return roleInA !== undefined ? String(row.success) : '403 auth:permission:denied';
    case 'manage-keys':
      return roleInA === 'admin' || roleInA === 'owner' ? String(row.success) : '403 auth:permission:denied';
    case 'manage-members':
      if (roleInA === undefined) return `404 ${access.hidden}`;
      return roleInA === 'admin' || roleInA === 'owner' ? String(row.success) : '403 auth:permission:denied';
    case 'read':
      // A list names no object: it answers every caller (with what the caller may see).
      if (access.hidden === '') return String(row.success);
      return roleInA !== undefined ? String(row.success) : `404 ${access.hidden}`;
    case 'write':
      if (roleInA === undefined) return `404 ${access.hidden}`;
      return roleInA === 'admin' || roleInA === 'owner' ? String(row.success) : '403 auth:permission:denied';
    case 'create': {
      if (caller.createsIn === 'global') return String(row.success);
      const role = caller.createsIn === undefined ? undefined : caller.roles?.[caller.createsIn];
      return role === 'admin' || role === 'owner' ? String(row.success) : '403 auth:permission:denied';
    }
  }
}

/** Mints, through the API, the ids and positions the rows and cases refer to. */
export async function mint(http: Http): Promise<Minted> {
  const home: Record<Org, string> = { A: bearer(TOKENS.owner), B: bearer(TOKENS.otherAdmin) };
  const out: Minted = {
    category: { A: '', B: '' },
    cursor: { A: '', B: '' },
    streamId: { A: '', B: '' },
    apiKey: { A: '', B: '' },
  };
  const viewerOf: Record<Org, string> = { A: 'p-viewer', B: 'p-both' };
  for (const org of ['A', 'B'] as const) {
    const created = await send(http, home[org], {
      method: 'POST',
      path: '/module-categories',
      body: {
        data: {
          givenId: `private-${org.toLowerCase()}`,
          name: `Private ${org === 'A' ? 'alpha-secret' : 'bravo-secret'}`,
          sortOrder: 0,
        },
      },
    });
    const page = await send(http, home[org], {
      method: 'GET',
      path: `/domains?moduleInstanceId=${IDS[org].moduleInstance}&limit=1`,
    });
    const stream = await send(http, home[org], { method: 'GET', path: streamPath(IDS[org].account) });
    const key = await send(http, home[org], {
      method: 'POST',
      path: `/organizations/${IDS[org].organization}/api-keys`,
      body: { data: { principalId: viewerOf[org], name: `matrix ${org === 'A' ? 'alpha-secret' : 'bravo-secret'}` } },
    });
    out.category[org] = need(created, created.body?.data?.id, 'a category id');
    out.cursor[org] = need(page, page.body?.meta?.nextCursor, 'a domain-list cursor');
    out.apiKey[org] = need(key, key.body?.data?.id, 'an api key id');
    out.streamId[org] = need(
      stream,
      stream.messages?.find((m) => (m.data?.events?.length ?? 0) > 0)?.id,
      'a stream message id',
    );
  }
  return out;
}

function need(o: Outcome, value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '')
    throw new Error(`could not mint ${what}: ${o.status} ${o.text.slice(0, 500)}`);
  return value;
}

export interface MatrixResult {
  row: Row;
  caller: CallerKind;
  outcome: Outcome;
  cell: string;
}

/** Every row × every caller: a row's callers at once, rows one after another; results in a fixed order. */
export async function runMatrix(http: Http, minted: Minted, rows = ROWS, callers = CALLERS): Promise<MatrixResult[]> {
  const out: MatrixResult[] = [];
  let seq = 0;
  for (const row of rows) {
    const probes = callers.map((caller) => ({ caller, probe: row.probe(minted, (seq += 1)) }));
    const outcomes = await Promise.all(probes.map(({ caller, probe }) => send(http, credentialOf(caller), probe)));
    outcomes.forEach((outcome, i) => out.push({ row, caller: probes[i]!.caller, outcome, cell: cell(outcome) }));
  }
  return out;
}
