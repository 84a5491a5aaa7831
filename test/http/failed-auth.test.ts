// Failed authentication per client address: past FAILED_AUTH_MAX failures in FAILED_AUTH_WINDOW_MS, the address is
// refused without a database lookup, except for tokens known valid (another tenant behind the same address).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { ORG_A, TOKENS } from '../support/world.js';

const CHEAP = '/module-categories';
const IDP = `/organizations/${ORG_A}/permitted-identity-providers`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const randomToken = () => `berth_k${randomBytes(4).toString('hex')}_${randomBytes(18).toString('base64url')}`;

function expectBlocked(res: TestResponse, status: 429 | 401, windowMs: number): void {
  expectError(res, status, status === 429 ? 'http:request:rate-limited' : 'auth:token:invalid');
  expect(Object.keys(res.body).sort()).toEqual(['code', 'description', 'message', 'requestId']);
  expect(res.body.description).toMatch(/failed authentications/);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(Math.ceil(windowMs / 1000));
}

describe('failed authentications from one address', () => {
  const MAX = 5;
  const WINDOW = 60_000;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { FAILED_AUTH_MAX: MAX, FAILED_AUTH_WINDOW_MS: WINDOW } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('blocks the address past FAILED_AUTH_MAX failures; then costs no lookup; known tokens still pass', async () => {
    // The viewer authenticates before the flood: its token is known valid.
    expect((await t.request('GET', CHEAP, { token: TOKENS.viewer })).status).toBe(200);

    // FAILED_AUTH_MAX failures, and the one past it, are ordinary 401s (each looked up).
    for (let i = 0; i < MAX; i++) expectError(await t.request('GET', CHEAP, { token: randomToken() }), 401);
    expectError(await t.request('GET', CHEAP), 401, 'auth:token:missing');

    const authenticate = vi.spyOn(t.services.authentication, 'authenticate');
    const knownCaller = vi.spyOn(t.services.authentication, 'knownCaller');
    try {
      const flood = await Promise.all(
        Array.from({ length: 30 }, () => t.request('GET', CHEAP, { token: randomToken() })),
      );
      for (const res of flood) expectBlocked(res, 429, WINDOW);
      expect(authenticate).not.toHaveBeenCalled();
      // A missing or malformed token is refused the same way.
      expectBlocked(await t.request('GET', CHEAP), 429, WINDOW);
      expectBlocked(await t.request('GET', CHEAP, { headers: { authorization: 'Basic abc' } }), 429, WINDOW);
      // A valid token that was never seen cannot be told from a guess without a lookup: refused too.
      expectBlocked(await t.request('GET', CHEAP, { token: TOKENS.otherAdmin }), 429, WINDOW);
      expect(authenticate).not.toHaveBeenCalled();
      expect(knownCaller).not.toHaveBeenCalled();

      // The known token keeps working (another tenant behind the same NAT): asked of memory once, and of the
      // database at most once (when memory cannot answer).
      const known = await t.request('GET', CHEAP, { token: TOKENS.viewer });
      expect(known.status).toBe(200);
      expect(knownCaller).toHaveBeenCalledTimes(1);
      expect(authenticate.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      authenticate.mockRestore();
      knownCaller.mockRestore();
    }
  });

  it('answers 401, never 429, on the identity-provider route; a known token still gets its answer there', async () => {
    expectBlocked(await t.request('GET', IDP, { token: randomToken() }), 401, WINDOW);
    expectBlocked(await t.request('GET', IDP), 401, WINDOW);
    const known = await t.request('GET', IDP, { token: TOKENS.viewer });
    expect(known.status).toBe(200);
    expect(known.body).toEqual({ data: ['EMAIL_PASSWORD', 'CODE_HOST_2', 'SSO_BROKER'] });
  });

  it('leaves the unauthenticated operational routes alone', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await t.request('GET', path)).status).toBe(200);
  });

  it('counts the refusals for the metrics (reason failed-auth, no organization)', () => {
    const entries = [...t.app.throttled.entries()];
    expect(entries).toEqual([{ reason: 'failed-auth', organization: '', count: 35 }]);
  });
});

describe('failed-authentication windows', () => {
  it('lets the address look tokens up again once its window has passed', async () => {
    const t = await startTestApp({ config: { FAILED_AUTH_MAX: 2, FAILED_AUTH_WINDOW_MS: 1_500 } });
    try {
      for (let i = 0; i < 3; i++) expectError(await t.request('GET', CHEAP, { token: randomToken() }), 401);
      const blocked = await t.request('GET', CHEAP, { token: TOKENS.admin });
      expectBlocked(blocked, 429, 1_500);
      await sleep(Number(blocked.headers.get('retry-after')) * 1000 + 100);
      expect((await t.request('GET', CHEAP, { token: TOKENS.admin })).status).toBe(200);
      expectError(await t.request('GET', CHEAP, { token: randomToken() }), 401, 'auth:token:invalid');
    } finally {
      await t.close();
    }
  }, 120_000);

  it('a known token that fails (revoked since) is looked up once, then refused like any other', async () => {
    const t = await startTestApp({ config: { FAILED_AUTH_MAX: 2, FAILED_AUTH_WINDOW_MS: 60_000 } });
    try {
      // The owner makes a key, uses it (known valid), then revokes it.
      const created = await t.request('POST', `/organizations/${ORG_A}/api-keys`, {
        token: TOKENS.owner,
        body: { data: { name: 'soon revoked' } },
      });
      expect(created.status, created.text).toBe(201);
      const { id, token } = created.body.data as { id: string; token: string };
      expect((await t.request('GET', CHEAP, { token })).status).toBe(200);
      for (let i = 0; i < 3; i++) expectError(await t.request('GET', CHEAP, { token: randomToken() }), 401);
      expect((await t.request('GET', CHEAP, { token })).status).toBe(200);
      const revoked = await t.request('DELETE', `/organizations/${ORG_A}/api-keys/${id}`, { token: TOKENS.owner });
      expect(revoked.status, revoked.text).toBe(204);
      expectError(await t.request('GET', CHEAP, { token }), 401, 'auth:token:invalid');
      expectBlocked(await t.request('GET', CHEAP, { token }), 429, 60_000);
    } finally {
      await t.close();
    }
  }, 120_000);

  it('blocks nothing when FAILED_AUTH_MAX is 0', async () => {
    const t = await startTestApp({ config: { FAILED_AUTH_MAX: 0 } });
    try {
      const res = await Promise.all(
        Array.from({ length: 40 }, () => t.request('GET', CHEAP, { token: randomToken() })),
      );
      for (const r of res) expectError(r, 401, 'auth:token:invalid');
      expect((await t.request('GET', CHEAP, { token: TOKENS.admin })).status).toBe(200);
    } finally {
      await t.close();
    }
  }, 120_000);
});
