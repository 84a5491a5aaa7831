// Request rate limits per principal within an organization (RATE_LIMIT_MAX per RATE_LIMIT_WINDOW_MS), in the process
// or shared in Redis. A principal's requests in several organizations: test/http/cross-org-limits.test.ts.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';
import { reachable, TEST_REDIS_URL } from '../support/redis.js';

const CHEAP = '/module-categories';
const IDP = `/organizations/${ORG_A}/permitted-identity-providers`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function expectRateLimited(res: TestResponse, windowMs: number): void {
  expectError(res, 429, 'http:request:rate-limited');
  expect(Object.keys(res.body).sort()).toEqual(['code', 'description', 'message', 'requestId']);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(Math.ceil(windowMs / 1000));
}

async function statuses(t: TestApp, n: number, token: string, path = CHEAP): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await t.request('GET', path, { token })).status);
  return out;
}

describe('rate limit per principal in an organization, counted in the process', () => {
  const WINDOW = 60_000;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { RATE_LIMIT_MAX: 5, RATE_LIMIT_WINDOW_MS: WINDOW } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 429 with the error object and Retry-After past RATE_LIMIT_MAX, per principal', async () => {
    expect(await statuses(t, 5, TOKENS.viewer)).toEqual([200, 200, 200, 200, 200]);
    const refused = await t.request('GET', CHEAP, { token: TOKENS.viewer });
    expectRateLimited(refused, WINDOW);
    // Any route of the principal shares the budget, and another principal has its own.
    expectRateLimited(
      await t.request('GET', '/domains/name-availability?name=x.example.com', { token: TOKENS.viewer }),
      WINDOW,
    );
    expect(await statuses(t, 5, TOKENS.admin)).toEqual([200, 200, 200, 200, 200]);
    expectRateLimited(await t.request('GET', CHEAP, { token: TOKENS.admin }), WINDOW);
    // The keys of one principal for one organization share its budget there: the owner's key scoped to org A,
    // and its unscoped key on a path that names org A.
    expect(await statuses(t, 5, TOKENS.owner)).toEqual([200, 200, 200, 200, 200]);
    expectRateLimited(
      await t.request('GET', `/organizations/${ORG_A}/log-catalog`, { token: TOKENS.ownerUnscoped }),
      WINDOW,
    );
    // The unscoped key's requests that name no organization count apart, in the principal's own budget.
    expect(await statuses(t, 5, TOKENS.ownerUnscoped)).toEqual([200, 200, 200, 200, 200]);
    expectRateLimited(await t.request('GET', CHEAP, { token: TOKENS.ownerUnscoped }), WINDOW);
  });

  it('refuses before reading the body, after authentication', async () => {
    // An unparseable body would be a 400 if the limit ran after parsing.
    const res = await t.request('POST', CHEAP, {
      token: TOKENS.viewer,
      rawBody: '{not json',
      headers: { 'content-type': 'application/json' },
    });
    expectRateLimited(res, WINDOW);
    // No token: 401, whatever the budget of anyone.
    expectError(await t.request('GET', CHEAP), 401, 'auth:token:missing');
  });

  it('never limits the identity-provider route (its spec statuses exclude 429) nor the operational routes', async () => {
    const idp = await statuses(t, 8, TOKENS.viewer, IDP);
    expect(idp).toEqual(Array(8).fill(200));
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      for (let i = 0; i < 7; i++) expect((await t.request('GET', path, { token: TOKENS.viewer })).status).toBe(200);
    }
  });

  it('counts the refusals by reason and organization for the metrics', async () => {
    const principal = [...t.app.throttled.entries()].filter((e) => e.reason === 'principal');
    // Viewer, admin and owner keys are scoped to org A, and the owner's unscoped key named org A once; its
    // requests that name no organization are counted under none.
    expect(principal).toHaveLength(2);
    expect(principal).toContainEqual({ reason: 'principal', organization: ORG_A, count: 5 });
    expect(principal).toContainEqual({ reason: 'principal', organization: '', count: 1 });
    // Without METRICS_TOKEN /metrics names no organization: the refusals are summed (per organization with the
    // token: test/http/metrics.test.ts).
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    const total = principal.reduce((n, e) => n + e.count, 0);
    expect(metrics).toContain(`berth_rate_limited_total{reason="principal"} ${total}`);
    expect(metrics).not.toContain('organization=');
  });
});

describe('per-principal rate limit windows', () => {
  it('lets the principal in again once its window has passed', async () => {
    const t = await startTestApp({ config: { RATE_LIMIT_MAX: 2, RATE_LIMIT_WINDOW_MS: 1_500 } });
    try {
      expect(await statuses(t, 3, TOKENS.viewer)).toEqual([200, 200, 429]);
      const refused = await t.request('GET', CHEAP, { token: TOKENS.viewer });
      expectRateLimited(refused, 1_500);
      await sleep(Number(refused.headers.get('retry-after')) * 1000 + 100);
      expect(await statuses(t, 3, TOKENS.viewer)).toEqual([200, 200, 429]);
    } finally {
      await t.close();
    }
  }, 120_000);

  it('limits nothing when RATE_LIMIT_MAX is 0', async () => {
    const t = await startTestApp({ config: { RATE_LIMIT_MAX: 0 } });
    try {
      const res = await Promise.all(
        Array.from({ length: 40 }, () => t.request('GET', CHEAP, { token: TOKENS.viewer })),
      );
      expect(res.map((r) => r.status)).toEqual(Array(40).fill(200));
      expect(res[0]!.headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await t.close();
    }
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------------------------
// Redis: one budget across replicas; Redis failing fails open to the replica's own count.

const SHARED_REDIS = TEST_REDIS_URL;

const redisUp = await reachable(SHARED_REDIS);
const redisServerBinary = spawnSync('redis-server', ['--version']).status === 0;

/**
 * A principal of its own per run, so runs sharing one Redis never share a budget: a viewer of org A (`token`,
 * scoped to it) and of org B (`tokenB`, scoped to B). `key` is its window's Redis key in org A.
 */
function principalWorld(): { world: Record<string, unknown>; token: string; tokenB: string; key: string } {
  const suffix = randomBytes(6).toString('hex');
  const principalId = `p-rl-${suffix}`;
  const token = `berth_k-rl-${suffix}_${randomBytes(16).toString('hex')}`;
  const tokenB = `berth_k-rlb-${suffix}_${randomBytes(16).toString('hex')}`;
  const world = mergeWorld(baseWorld(), {
    principals: [
      {
        id: principalId,
        name: 'Rate limited',
        memberships: [
          { organizationId: ORG_A, role: 'viewer' },
          { organizationId: ORG_B, role: 'viewer' },
        ],
        apiKeys: [
          { id: `k-rl-${suffix}`, token, organizationId: ORG_A },
          { id: `k-rlb-${suffix}`, token: tokenB, organizationId: ORG_B },
        ],
      },
    ],
  });
  return { world, token, tokenB, key: redisKey(principalId, ORG_A) };
}

/** The Redis key of a principal's window in an organization. */
const redisKey = (principalId: string, organizationId: string) =>
  `berth:rate-limit:principal:${principalId}:org:${organizationId}`;

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function app(world: Record<string, unknown>, config: Partial<Config>): Promise<TestApp> {
  const t = await startTestApp({ fixture: world, config: { RATE_LIMIT_WINDOW_MS: 60_000, ...config } });
  apps.push(t);
  return t;
}

describe.skipIf(!redisUp)(`per-principal rate limit shared in Redis (${SHARED_REDIS})`, () => {
  it('gives two replicas with the same REDIS_URL one budget per principal in an organization', async () => {
    const { world, token, tokenB, key } = principalWorld();
    const one = await app(world, { RATE_LIMIT_MAX: 6, REDIS_URL: SHARED_REDIS });
    const two = await app(world, { RATE_LIMIT_MAX: 6, REDIS_URL: SHARED_REDIS });
    expect(await statuses(one, 3, token)).toEqual([200, 200, 200]);
    expect(await statuses(two, 3, token)).toEqual([200, 200, 200]);
    expectRateLimited(await one.request('GET', CHEAP, { token }), 60_000);
    expectRateLimited(await two.request('GET', CHEAP, { token }), 60_000);
    // The same principal's budget in org B, on either replica, is its own.
    expect(await statuses(one, 2, tokenB)).toEqual([200, 200]);
    expect(await statuses(two, 2, tokenB)).toEqual([200, 200]);
    // The counts are Redis's, one key per organization, with the window as its expiry.
    const redis = new Redis(SHARED_REDIS);
    const keyB = key.replace(`:org:${ORG_A}`, `:org:${ORG_B}`);
    try {
      expect(await redis.get(key)).toBe('8');
      expect(await redis.get(keyB)).toBe('4');
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await redis.del(key, keyB);
    } finally {
      redis.disconnect();
    }
  }, 120_000);
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 10_000;
  while (!(await reachable(`redis://127.0.0.1:${port}`))) {
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await sleep(50);
  }
  return child;
}

async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('per-principal rate limit when Redis fails', () => {
  it('fails open to the replica’s own count when Redis is unreachable: no 500s, still limited', async () => {
    const { world, token } = principalWorld();
    const t = await app(world, { RATE_LIMIT_MAX: 3, REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    const started = Date.now();
    expect(await statuses(t, 4, token)).toEqual([200, 200, 200, 429]);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 120_000);

  it.skipIf(!redisServerBinary)(
    'keeps answering when Redis goes away mid-way, and counts in Redis again once it is back',
    async () => {
      const port = await freePort();
      const url = `redis://127.0.0.1:${port}`;
      let redisServer = await startRedis(port);
      try {
        const { world, token, key } = principalWorld();
        const t = await app(world, { RATE_LIMIT_MAX: 3, REDIS_URL: url });
        expect(await statuses(t, 4, token)).toEqual([200, 200, 200, 429]);
        const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        await redis.connect();
        expect(await redis.get(key)).toBe('4');
        redis.disconnect();

        await stopRedis(redisServer);
        // The replica counts on its own now: a fresh count, not a 500.
        const started = Date.now();
        const during = await statuses(t, 4, token);
        expect(during).toEqual([200, 200, 200, 429]);
        expect(Date.now() - started).toBeLessThan(10_000);

        // Redis back (empty): after the retry period the count is in Redis again.
        redisServer = await startRedis(port);
        const again = new Redis(url);
        try {
          const deadline = Date.now() + 20_000;
          let stored: string | null = null;
          while (stored === null && Date.now() < deadline) {
            const res = await t.request('GET', CHEAP, { token });
            expect([200, 429]).toContain(res.status);
            stored = await again.get(key);
            if (stored === null) await sleep(250);
          }
          expect(stored).toBe('1');
        } finally {
          again.disconnect();
        }
      } finally {
        await stopRedis(redisServer);
      }
    },
    120_000,
  );
});
