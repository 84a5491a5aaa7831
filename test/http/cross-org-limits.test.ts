// Limits count per principal within an organization (issue 20, "No tenant can stall another"): a principal who is an
// Acme owner and a Globex viewer is given a Globex-scoped key by a Globex admin. Whatever that key does (the stream
// cap, the request rate limit, the heavy-work share), the same principal's requests for Acme, through its Acme key
// or its unscoped key, are untouched; what the Globex key is refused, anything for Globex is refused too. A request
// that names no organization counts in the principal's own share. Last, which tenant's turns a request's database
// statements take.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { Caller } from '../../src/core/caller.js';
import { fairnessKey } from '../../src/core/tenant-context.js';
import { installTenantContext } from '../../src/http/plugins/tenant.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { logSource } from '../support/log-source.js';
import { openSse, type SseReader, streamQuery } from '../support/log-stream-wire.js';

const ACME = 'acme';
const GLOBEX = 'globex';
const ACME_KEY = 'berth_k-dual-acme_dual-acme-secret-000000000';
const UNSCOPED_KEY = 'berth_k-dual-all_dual-all-secret-0000000000';
const GLOBEX_ADMIN_KEY = 'berth_k-globex-admin_globex-admin-secret-00';
const QUERY = '/cloud/logs/logs-insights';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const WINDOW = { startTime: T0 - 60_000, endTime: T0 + 60_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** Acme and Globex, each with a local account; Globex also an aws one (`awsEndpoint`) for queries that last. */
function world(awsEndpoint = 'http://127.0.0.1:9'): Record<string, unknown> {
  return {
    organizations: [
      { id: ACME, name: 'Acme', permittedIdentityProviders: ['SSO_BROKER'] },
      { id: GLOBEX, name: 'Globex', permittedIdentityProviders: ['SOCIAL_1'] },
      { id: 'initech', name: 'Initech', permittedIdentityProviders: [] },
    ],
    principals: [
      {
        id: 'p-dual',
        name: 'Acme owner, Globex viewer',
        memberships: [
          { organizationId: ACME, role: 'owner' },
          { organizationId: GLOBEX, role: 'viewer' },
        ],
        apiKeys: [
          { id: 'k-dual-acme', token: ACME_KEY, organizationId: ACME },
          { id: 'k-dual-all', token: UNSCOPED_KEY },
        ],
      },
      {
        id: 'p-globex-admin',
        name: 'Globex admin',
        memberships: [{ organizationId: GLOBEX, role: 'admin' }],
        apiKeys: [{ id: 'k-globex-admin', token: GLOBEX_ADMIN_KEY, organizationId: GLOBEX }],
      },
    ],
    cloudAccounts: [
      { id: 'acc-acme', organizationId: ACME, provider: 'local', region: 'us-east-1' },
      { id: 'acc-globex', organizationId: GLOBEX, provider: 'local', region: 'us-east-1' },
      { id: 'aws-globex', organizationId: GLOBEX, provider: 'aws', region: 'us-east-1', endpoint: awsEndpoint },
    ],
    projects: [
      { id: 'proj-acme', organizationId: ACME, name: 'Acme' },
      { id: 'proj-globex', organizationId: GLOBEX, name: 'Globex' },
    ],
    environments: [
      { id: 'env-acme', projectId: 'proj-acme', name: 'production' },
      { id: 'env-globex', projectId: 'proj-globex', name: 'production' },
    ],
    moduleInstances: [
      { id: 'mi-acme', environmentId: 'env-acme', name: 'web', logSources: [logSource('app', 'acc-acme', '/acme')] },
      {
        id: 'mi-globex',
        environmentId: 'env-globex',
        name: 'web',
        logSources: [logSource('app', 'aws-globex', '/globex')],
      },
    ],
    logEvents: [
      {
        cloudAccountId: 'acc-acme',
        region: 'us-east-1',
        logGroup: '/acme',
        logStream: 's/1',
        timestamp: T0,
        message: 'INFO acme',
      },
      {
        cloudAccountId: 'acc-globex',
        region: 'us-east-1',
        logGroup: '/globex',
        logStream: 's/1',
        timestamp: T0,
        message: 'INFO globex',
      },
    ],
  };
}

/** What the attack needs: a Globex admin mints a Globex-scoped key for the shared principal. */
async function mintGlobexKey(t: TestApp): Promise<string> {
  const res = await t.request('POST', `/organizations/${GLOBEX}/api-keys`, {
    token: GLOBEX_ADMIN_KEY,
    body: { data: { principalId: 'p-dual', name: 'minted by Globex' } },
  });
  expect(res.status).toBe(201);
  return res.body.data.token as string;
}

async function start(config: Partial<Config>, aws?: FakeAws): Promise<TestApp> {
  return startTestApp({
    fixture: world(aws?.endpoint),
    config,
    services:
      aws === undefined
        ? undefined
        : (store, cfg) =>
            createServices(store, cfg, {
              providers: {
                aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(2, 5) },
              },
            }),
  });
}

const tailParams = (accountId: string, logGroups: string) => ({
  accountId,
  logGroups,
  logStreamPrefix: 's/',
  startTime: T0 - 1,
  tail: true,
});

/** A tail that opened: 200, and its history (the fixture's one event) arrives. */
async function expectTailOpens(t: TestApp, token: string, accountId: string, group: string): Promise<SseReader> {
  const s = await openSse(t.url, token, tailParams(accountId, group));
  expect(s.res.status).toBe(200);
  const events = await s.events(1);
  expect(events.map((e) => e.message)).toEqual([`INFO ${accountId === 'acc-acme' ? 'acme' : 'globex'}`]);
  return s;
}

function expectRetryAfter(res: TestResponse): void {
  expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

// The stream cap and the heavy-work share, on one app: Globex's aws account answers Insights queries that last
// while `hold` is true, so Globex queries can hold the principal's share as long as the test needs.
describe('the stream cap and the heavy-work share count per principal within an organization', () => {
  let aws: FakeAws;
  let t: TestApp;
  let globexKey: string;
  let hold = true;
  const open: SseReader[] = [];
  beforeAll(async () => {
    aws = await startFakeAws({
      logs: { queryHandler: () => ({ rows: [], pollsBeforeFinal: hold ? 1_000_000 : 0 }) },
    });
    aws.logs.createLogStream('/globex', 's/1');
    t = await start(
      { STREAM_MAX_PER_PRINCIPAL: 3, STREAM_KEEPALIVE_MS: 200, HEAVY_QUEUE_MS: 200, INSIGHTS_POLL_INTERVAL_MS: 50 },
      aws,
    );
    globexKey = await mintGlobexKey(t);
  });
  afterAll(async () => {
    hold = false;
    for (const s of open) s.close();
    await t?.close();
    await aws?.close();
  });

  const streamOf = (token: string, accountId: string, group: string) =>
    t.request('GET', `/cloud/logs/stream?${streamQuery(tailParams(accountId, group))}`, { token });
  const query = (token: string, moduleInstanceId: string) =>
    t.request('POST', QUERY, { token, body: { ...WINDOW, moduleInstanceIds: [moduleInstanceId], limit: 10 } });

  it('a Globex key at the stream cap leaves the Acme streams of the same principal untouched', async () => {
    const cap = t.config.STREAM_MAX_PER_PRINCIPAL;
    for (let i = 0; i < cap; i++) open.push(await expectTailOpens(t, globexKey, 'acc-globex', '/globex'));
    const refused = await streamOf(globexKey, 'acc-globex', '/globex');
    expectError(refused, 429, 'logs:stream:too-many-streams');
    expectRetryAfter(refused);
    // The same principal on Acme's account: through its Acme key, and through its unscoped key.
    open.push(await expectTailOpens(t, ACME_KEY, 'acc-acme', '/acme'));
    open.push(await expectTailOpens(t, UNSCOPED_KEY, 'acc-acme', '/acme'));
    // A stream of a Globex account is Globex's share whichever key opens it.
    expectError(await streamOf(UNSCOPED_KEY, 'acc-globex', '/globex'), 429, 'logs:stream:too-many-streams');
    // Acme's share of the principal is a full one of its own: one more, then it too is at the cap.
    open.push(await expectTailOpens(t, ACME_KEY, 'acc-acme', '/acme'));
    expectError(await streamOf(UNSCOPED_KEY, 'acc-acme', '/acme'), 429, 'logs:stream:too-many-streams');
    expect(t.services.streams.refused.get(GLOBEX)).toBe(2);
    expect(t.services.streams.refused.get(ACME)).toBe(1);
  });

  it("gives a stream's share back when it ends, in its organization's share only", async () => {
    const cap = t.config.STREAM_MAX_PER_PRINCIPAL;
    const before = t.services.streams.activeStreams;
    open.shift()!.close();
    await waitFor(() => t.services.streams.activeStreams === before - 1, 'the closed stream to be released');
    expectError(await streamOf(ACME_KEY, 'acc-acme', '/acme'), 429, 'logs:stream:too-many-streams');
    open.push(await expectTailOpens(t, globexKey, 'acc-globex', '/globex'));
    expect(t.services.streams.activeStreams).toBe(2 * cap);
    for (const s of open.splice(0)) s.close();
    await waitFor(() => t.services.streams.activeStreams === 0, 'every stream to be released');
  });

  it("Globex queries holding the principal's heavy-work share leave its Acme queries and streams untouched", async () => {
    const share = t.config.HEAVY_MAX_PER_PRINCIPAL;
    const held = Array.from({ length: share }, () => query(globexKey, 'mi-globex'));
    await waitFor(() => aws.logs.runningQueries().length === share, `${share} Globex queries to be running`);
    expect(t.services.heavy.running).toBe(share);
    try {
      const refused = await query(globexKey, 'mi-globex');
      expectError(refused, 429, 'http:request:rate-limited');
      expectRetryAfter(refused);
      // A Globex query is Globex's share whichever key sends it.
      expectError(await query(UNSCOPED_KEY, 'mi-globex'), 429, 'http:request:rate-limited');
      // The same principal's Acme queries, through its Acme key and its unscoped key, run at once.
      for (const token of [ACME_KEY, UNSCOPED_KEY]) {
        const res = await query(token, 'mi-acme');
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.rows.map((r: { message: string }) => r.message)).toEqual(['INFO acme']);
      }
      // And an Acme stream reads its history (heavy work in Acme's share).
      (await expectTailOpens(t, ACME_KEY, 'acc-acme', '/acme')).close();
      expect(t.services.heavy.stats().get(ACME)?.throttled ?? 0).toBe(0);
      expect(t.services.heavy.stats().get(GLOBEX)?.throttled).toBe(2);
    } finally {
      hold = false;
      for (const q of aws.logs.runningQueries()) q.pollsBeforeFinal = 0;
    }
    for (const res of await Promise.all(held)) expect(res.status).toBe(200);
  });
});

describe('the request rate limit counts per principal within an organization', () => {
  const MAX = 5;
  let t: TestApp;
  let globexKey: string;
  beforeAll(async () => {
    t = await start({ RATE_LIMIT_MAX: MAX, RATE_LIMIT_WINDOW_MS: 60_000 });
    globexKey = await mintGlobexKey(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = (token: string, path: string) => t.request('GET', path, { token });
  const acmeQuery = (token: string) =>
    t.request('POST', QUERY, { token, body: { ...WINDOW, moduleInstanceIds: ['mi-acme'], limit: 10 } });
  const expectLimited = (res: TestResponse) => {
    expectError(res, 429, 'http:request:rate-limited');
    expectRetryAfter(res);
  };
  const expectOk = (res: TestResponse) => expect(res.status, JSON.stringify(res.body)).toBe(200);

  it("a Globex key's flood leaves the same principal's Acme and unscoped budgets untouched", async () => {
    for (let i = 0; i < MAX; i++) expectOk(await get(globexKey, '/me'));
    expectLimited(await get(globexKey, '/me'));
    // The same principal for Acme, through its Acme key and its unscoped key on a path naming Acme.
    expectOk(await get(ACME_KEY, '/me'));
    expectOk(await get(UNSCOPED_KEY, `/organizations/${ACME}/log-catalog`));
    // Its unscoped key's requests that name no organization.
    expectOk(await get(UNSCOPED_KEY, '/me'));
    // Anything for Globex is Globex's budget, whichever key sends it.
    expectLimited(await get(globexKey, `/organizations/${GLOBEX}/log-catalog`));
    expectLimited(await get(UNSCOPED_KEY, `/organizations/${GLOBEX}/log-catalog`));
  });

  it("counts an unscoped key's requests that name no organization in the principal's own budget", async () => {
    // One `GET /me` so far; four more fill the principal's own budget.
    for (let i = 1; i < MAX; i++) expectOk(await get(UNSCOPED_KEY, '/me'));
    expectLimited(await get(UNSCOPED_KEY, '/me'));
    // A path naming an organization the principal has no role in opens no budget of its own.
    expectLimited(await get(UNSCOPED_KEY, '/organizations/initech/log-catalog'));
    // An organization known only from the body is not known when the limit runs: the principal's own budget.
    expectLimited(await acmeQuery(UNSCOPED_KEY));
    // Acme's budget (two used so far) is apart: the unscoped key on a path naming Acme, and the Acme key.
    expectOk(await get(ACME_KEY, '/me'));
    expectOk(await get(UNSCOPED_KEY, `/organizations/${ACME}/log-catalog`));
    expectOk(await acmeQuery(ACME_KEY));
    expectLimited(await get(ACME_KEY, '/me'));
    expectLimited(await get(UNSCOPED_KEY, `/organizations/${ACME}/log-catalog`));
    // Refusals are counted under the organization whose budget was full (none for the principal's own).
    const refusals = [...t.app.throttled.entries()].filter((e) => e.reason === 'principal');
    expect(refusals).toHaveLength(3);
    expect(refusals).toContainEqual({ reason: 'principal', organization: GLOBEX, count: 3 });
    expect(refusals).toContainEqual({ reason: 'principal', organization: '', count: 3 });
    expect(refusals).toContainEqual({ reason: 'principal', organization: ACME, count: 2 });
  });
});

describe("a request's turns in the database's fair queues", () => {
  it("are its organization's for a scoped key or a path naming one of the caller's, else its principal's", async () => {
    const memberships = new Map([
      [ACME, 'owner'],
      [GLOBEX, 'viewer'],
    ] as const);
    const caller = (keyOrganizationId: string | null): Caller => ({
      principalId: 'p-dual',
      keyId: 'k',
      superadmin: false,
      keyOrganizationId,
      memberships,
    });
    const callers: Record<string, Caller> = { globex: caller(GLOBEX), unscoped: caller(null) };
    const app = Fastify();
    app.decorateRequest('caller', null);
    installTenantContext(app);
    // Stands in for the authentication hook.
    app.addHook('onRequest', async (request) => {
      request.caller = callers[String(request.headers['x-key'])] ?? null;
    });
    const turn = async () => ({ turn: fairnessKey() });
    app.get('/me', turn);
    app.get('/organizations/:id/log-catalog', turn);
    const turnOf = async (key: string, url: string) =>
      (await app.inject({ method: 'GET', url, headers: { 'x-key': key } })).json().turn;
    try {
      expect(await turnOf('globex', '/me')).toBe(`org:${GLOBEX}`);
      // A scoped key acts in its organization only, whatever the path names.
      expect(await turnOf('globex', `/organizations/${ACME}/log-catalog`)).toBe(`org:${GLOBEX}`);
      expect(await turnOf('unscoped', `/organizations/${ACME}/log-catalog`)).toBe(`org:${ACME}`);
      expect(await turnOf('unscoped', '/me')).toBe('principal:p-dual');
      expect(await turnOf('unscoped', '/organizations/initech/log-catalog')).toBe('principal:p-dual');
    } finally {
      await app.close();
    }
  });
});
