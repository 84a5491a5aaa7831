/**
 * Sign-in through a real OpenID Provider (`oidc-provider`, in process): the redirect with PKCE, state and nonce,
 * the provider's own login and consent pages, the callback, the session cookie, `GET /me`, sign-out, linking, and
 * every refusal. Runs on PGlite and on PostgreSQL (TEST_DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { noSignIn } from '../../src/sign-in-config.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import {
  browserFetch,
  CookieJar,
  settingsFor,
  startOidcProvider,
  type TestOidcProvider,
  walkSignIn,
} from '../support/oidc-provider.js';
import { baseWorld, ORG_A } from '../support/world.js';

let t: TestApp;
let op: TestOidcProvider;
let host: string;

beforeAll(async () => {
  op = await startOidcProvider();
  const world = baseWorld() as { principals: Record<string, unknown>[] };
  for (const p of world.principals) {
    if (p.id === 'p-owner') p.identities = [{ provider: 'SSO_BROKER', issuer: op.issuer, subject: 'alice' }];
    if (p.id === 'p-admin') p.email = 'bob@a.example';
    if (p.id === 'p-member') p.identities = [{ provider: 'WORKFORCE_1', issuer: op.issuer, subject: 'wanda' }];
  }
  const entry = (provider: 'SSO_BROKER' | 'WORKFORCE_1', linkByVerifiedEmail: boolean) =>
    settingsFor(op, provider, { scopes: ['openid', 'email'], linkByVerifiedEmail });
  t = await startTestApp({
    fixture: world,
    // Every test here starts sign-ins from one address: the limit on starts has a test of its own below.
    config: { SIGN_IN_MAX_PER_ADDRESS: 100_000 },
    services: (store, config) =>
      createServices(store, config, {
        signIn: { ...noSignIn(config), providers: [entry('SSO_BROKER', false), entry('WORKFORCE_1', true)] },
      }),
  });
  t.services.signIn.useListeningAddress(t.url);
  host = new URL(t.url).host;
  op.allowRedirects([`${t.url}/auth/callback/SSO_BROKER`, `${t.url}/auth/callback/WORKFORCE_1`]);
  op.accounts.set('alice', { sub: 'alice', email: 'alice@idp.example', emailVerified: true });
  op.accounts.set('mallory', { sub: 'mallory', email: 'mallory@idp.example', emailVerified: true });
  op.accounts.set('bob', { sub: 'bob', email: 'Bob@A.example', emailVerified: true });
  op.accounts.set('bob-unverified', { sub: 'bob-unverified', email: 'bob@a.example', emailVerified: false });
  op.accounts.set('wanda', { sub: 'wanda' });
});
afterAll(async () => {
  await t?.close();
  await op?.close();
});

const start = (provider: string, query = '') => new URL(`${t.url}/auth/sign-in/${provider}${query}`);
const session = (jar: CookieJar) => jar.get(host, 'berth_session');
const me = (jar: CookieJar) =>
  t.request('GET', '/me', { headers: { cookie: `berth_session=${session(jar) ?? 'none'}` } });

/** A sign-in walked up to the callback URL the provider sends the browser to, not yet followed. */
async function untilCallback(jar: CookieJar, login: string, provider = 'SSO_BROKER'): Promise<URL> {
  const hops = await walkSignIn(jar, start(provider), op, login, { stopAtCallback: true });
  const last = hops.at(-1)!;
  expect(last.url.pathname).toBe(`/auth/callback/${provider}`);
  return last.url;
}

describe('sign-in with an OpenID Provider', () => {
  it('redirects to the issuer with PKCE (S256), state, nonce and the redirect URI, and sets the attempt cookie', async () => {
    const jar = new CookieJar();
    const res = await browserFetch(jar, start('SSO_BROKER', '?returnTo=%2Fui%2Flogs%3Fq%3D1'));
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin).toBe(op.issuer);
    const params = location.searchParams;
    expect(params.get('client_id')).toBe(op.clientId);
    expect(params.get('redirect_uri')).toBe(`${t.url}/auth/callback/SSO_BROKER`);
    expect(params.get('response_type')).toBe('code');
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(params.get('scope')?.split(' ')).toContain('openid');
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('berth_sign_in='));
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/auth\/callback\//);
  });

  it('signs in through the login page, sets the session cookie and lands on returnTo', async () => {
    const jar = new CookieJar();
    const hops = await walkSignIn(jar, start('SSO_BROKER', '?returnTo=%2Fui%2Flogs%3Fq%3D1'), op, 'alice');
    const callback = hops.at(-1)!;
    expect(callback.url.pathname).toBe('/auth/callback/SSO_BROKER');
    expect(callback.response.status).toBe(302);
    expect(callback.response.headers.get('location')).toBe('/ui/logs?q=1');
    const cookie = callback.response.headers.getSetCookie().find((c) => c.startsWith('berth_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/Max-Age=43200/);
    expect(cookie).not.toMatch(/Secure/i);
    const res = await me(jar);
    expect(res.status).toBe(200);
    expect(res.body.data.principal.id).toBe('p-owner');
    expect(res.body.data.session.provider).toBe('SSO_BROKER');
    expect(res.body.data.key).toBeUndefined();
    expect(res.body.data.organizations.map((o: { id: string }) => o.id)).toEqual([ORG_A]);
    // The session works on the organization's own routes.
    const catalog = await t.request('GET', `/organizations/${ORG_A}/log-catalog`, {
      headers: { cookie: `berth_session=${session(jar)}` },
    });
    expect(catalog.status).toBe(200);
  });

  it('signs out: the session ends on the server and the cookie is cleared', async () => {
    const jar = new CookieJar();
    await walkSignIn(jar, start('SSO_BROKER'), op, 'alice');
    const id = session(jar)!;
    expect((await me(jar)).status).toBe(200);
    const out = await t.request('POST', '/auth/sign-out', {
      headers: { cookie: `berth_session=${id}`, origin: new URL(t.url).origin },
    });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie().join()).toMatch(/berth_session=;/);
    const after = await t.request('GET', '/me', { headers: { cookie: `berth_session=${id}` } });
    expectError(after, 401, 'auth:session:invalid');
  });

  it('refuses a callback whose state is not the one sent: 401 to a program, the sign-in page to a browser', async () => {
    const jar = new CookieJar();
    const callback = await untilCallback(jar, 'alice');
    callback.searchParams.set('state', 'forged-state-0123456789');
    const attempt = jar.get(host, 'berth_sign_in')!;
    const api = await t.request('GET', `${callback.pathname}${callback.search}`, {
      headers: { cookie: `berth_sign_in=${attempt}`, accept: 'application/json' },
    });
    expectError(api, 401, 'auth:sign-in:failed');
    expect(api.headers.getSetCookie().some((c) => c.startsWith('berth_session='))).toBe(false);
  });

  it('sends a browser whose sign-in failed back to the sign-in page with the reason', async () => {
    const jar = new CookieJar();
    const callback = await untilCallback(jar, 'alice');
    callback.searchParams.set('state', 'forged-state-0123456789');
    const res = await browserFetch(jar, callback);
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!, t.url);
    expect(location.pathname).toBe('/ui/sign-in');
    expect(location.searchParams.get('error')).toBe('failed');
    expect(session(jar)).toBeUndefined();
  });

  it('refuses a replayed code', async () => {
    const first = new CookieJar();
    const used = await untilCallback(first, 'alice');
    expect((await browserFetch(first, used)).status).toBe(302);
    // A new attempt (its own state and verifier), completed with the code already spent.
    const second = new CookieJar();
    const begun = await browserFetch(second, start('SSO_BROKER'));
    const state = new URL(begun.headers.get('location')!).searchParams.get('state')!;
    const replay = new URL(used);
    replay.searchParams.set('state', state);
    const res = await t.request('GET', `${replay.pathname}${replay.search}`, {
      headers: { cookie: `berth_sign_in=${second.get(host, 'berth_sign_in')}` },
    });
    expectError(res, 401, 'auth:sign-in:failed');
  });

  it('refuses the same callback twice (the attempt is used once)', async () => {
    const jar = new CookieJar();
    const callback = await untilCallback(jar, 'alice');
    const attempt = jar.get(host, 'berth_sign_in')!;
    expect((await browserFetch(jar, callback)).status).toBe(302);
    const again = await t.request('GET', `${callback.pathname}${callback.search}`, {
      headers: { cookie: `berth_sign_in=${attempt}` },
    });
    expectError(again, 401, 'auth:sign-in:failed');
  });

  const tampered: [string, (claims: Record<string, unknown>) => Record<string, unknown>][] = [
    ['a wrong nonce', (c) => ({ ...c, nonce: 'not-the-nonce-berth-sent' })],
    ['a wrong audience', (c) => ({ ...c, aud: 'another-client' })],
    [
      'an expired ID token',
      (c) => ({ ...c, iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }),
    ],
    ['another issuer', (c) => ({ ...c, iss: 'https://idp.evil.example' })],
  ];
  for (const [what, rewrite] of tampered) {
    it(`refuses an ID token with ${what}`, async () => {
      const jar = new CookieJar();
      const callback = await untilCallback(jar, 'alice');
      op.tamper = rewrite;
      try {
        const res = await t.request('GET', `${callback.pathname}${callback.search}`, {
          headers: { cookie: `berth_sign_in=${jar.get(host, 'berth_sign_in')}` },
        });
        expectError(res, 401, 'auth:sign-in:failed');
      } finally {
        op.tamper = undefined;
      }
    });
  }

  it('accepts the same token untampered (the tamper hook itself is not what fails)', async () => {
    const jar = new CookieJar();
    const callback = await untilCallback(jar, 'alice');
    op.tamper = (c) => ({ ...c });
    try {
      const res = await browserFetch(jar, callback);
      expect(res.status).toBe(302);
      expect(session(jar)).toBeDefined();
    } finally {
      op.tamper = undefined;
    }
  });

  it('refuses an unknown identity (no self-sign-up), with one body for every cause', async () => {
    const jar = new CookieJar();
    const callback = await untilCallback(jar, 'mallory');
    const res = await t.request('GET', `${callback.pathname}${callback.search}`, {
      headers: { cookie: `berth_sign_in=${jar.get(host, 'berth_sign_in')}` },
    });
    expectError(res, 401, 'auth:sign-in:failed');
    const { requestId: _a, ...body } = res.body;
    const other = new CookieJar();
    const forged = await untilCallback(other, 'alice');
    forged.searchParams.set('state', 'forged');
    const res2 = await t.request('GET', `${forged.pathname}${forged.search}`, {
      headers: { cookie: `berth_sign_in=${other.get(host, 'berth_sign_in')}` },
    });
    const { requestId: _b, ...body2 } = res2.body;
    expect(body2).toEqual(body);
  });

  it('tells a browser an identity is unknown', async () => {
    const jar = new CookieJar();
    const hops = await walkSignIn(jar, start('SSO_BROKER'), op, 'mallory');
    const last = hops.at(-1)!.response;
    expect(last.status).toBe(303);
    expect(new URL(last.headers.get('location')!, t.url).searchParams.get('error')).toBe('unknown-identity');
  });

  it('does not link by email at an issuer not trusted for it, even a verified one', async () => {
    const jar = new CookieJar();
    const hops = await walkSignIn(jar, start('SSO_BROKER'), op, 'bob');
    expect(hops.at(-1)!.response.status).toBe(303);
    expect(session(jar)).toBeUndefined();
  });

  it('does not link an unverified email', async () => {
    const jar = new CookieJar();
    const hops = await walkSignIn(jar, start('WORKFORCE_1'), op, 'bob-unverified');
    expect(hops.at(-1)!.response.status).toBe(303);
    expect(session(jar)).toBeUndefined();
  });

  it('links a first sign-in whose verified email names exactly one principal, where the entry allows it', async () => {
    const jar = new CookieJar();
    const hops = await walkSignIn(jar, start('WORKFORCE_1'), op, 'bob');
    expect(hops.at(-1)!.response.status).toBe(302);
    const cookie = { cookie: `berth_session=${session(jar)}` };
    const identities = await t.request('GET', '/me/identities', { headers: cookie });
    expect(identities.status).toBe(200);
    expect(identities.body.data).toEqual([
      expect.objectContaining({ provider: 'WORKFORCE_1', issuer: op.issuer, subject: 'bob', email: 'Bob@A.example' }),
    ]);
  });

  it("answers 403 not-permitted in an organization whose list lacks the session's provider", async () => {
    // p-member is a member of ORG_A, which permits SSO_BROKER, EMAIL_PASSWORD and CODE_HOST_2, not WORKFORCE_1.
    const jar = new CookieJar();
    await walkSignIn(jar, start('WORKFORCE_1'), op, 'wanda');
    const cookie = { cookie: `berth_session=${session(jar)}` };
    const profile = await me(jar);
    expect(profile.status).toBe(200);
    expect(profile.body.data.organizations).toEqual([]);
    const res = await t.request('GET', `/organizations/${ORG_A}/log-catalog`, { headers: cookie });
    expectError(res, 403, 'auth:identity-provider:not-permitted');
    expect(res.body.action.url).toContain(`organizationId=${ORG_A}`);
    expect(res.body.description).toContain('SSO_BROKER');
  });

  it('refuses a returnTo that leaves the site', async () => {
    for (const returnTo of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      'javascript:alert(1)',
      'ui/logs',
    ]) {
      const res = await t.request('GET', `/auth/sign-in/SSO_BROKER?returnTo=${encodeURIComponent(returnTo)}`);
      expectError(res, 400, 'auth:sign-in:bad-return-to');
    }
    const same = await browserFetch(
      new CookieJar(),
      start('SSO_BROKER', `?returnTo=${encodeURIComponent(`${t.url}/ui/logs`)}`),
    );
    expect(same.status).toBe(302);
  });

  it('answers 404 for a provider not configured here and 400 for a value that is no provider', async () => {
    expectError(await t.request('GET', '/auth/sign-in/SOCIAL_1'), 404, 'auth:sign-in:provider-not-configured');
    expectError(await t.request('GET', '/auth/sign-in/social_1'), 400, 'validation:request:invalid-params');
    expectError(
      await t.request('GET', '/auth/callback/CODE_HOST_1?code=x&state=y'),
      404,
      'auth:sign-in:provider-not-configured',
    );
  });

  it('holds one address to SIGN_IN_MAX_PER_ADDRESS sign-ins started per window (each writes a row)', async () => {
    const limited = await startTestApp({
      config: { SIGN_IN_MAX_PER_ADDRESS: 3 },
      services: (store, config) =>
        createServices(store, config, {
          signIn: {
            ...noSignIn(config),
            providers: [settingsFor(op, 'SSO_BROKER', { displayName: 'SSO' })],
          },
        }),
    });
    try {
      limited.services.signIn.useListeningAddress(limited.url);
      for (let i = 0; i < 3; i++) {
        const started = await browserFetch(new CookieJar(), new URL(`${limited.url}/auth/sign-in/SSO_BROKER`));
        expect(started.status).toBe(302);
      }
      const refused = await limited.request('GET', '/auth/sign-in/SSO_BROKER');
      expectError(refused, 429, 'http:request:rate-limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });

  it('lists the configured ways to sign in, and those an organization permits', async () => {
    const all = await t.request('GET', '/auth/providers');
    expect(all.body.data.map((m: { provider: string }) => m.provider)).toEqual(['SSO_BROKER', 'WORKFORCE_1']);
    const inA = await t.request('GET', `/auth/providers?organizationId=${ORG_A}`);
    expect(inA.body.data).toEqual([
      { provider: 'SSO_BROKER', displayName: 'SSO_BROKER', kind: 'oidc', signInUrl: '/auth/sign-in/SSO_BROKER' },
    ]);
  });

  it('unlinks an identity: its sessions end at once', async () => {
    const jar = new CookieJar();
    await walkSignIn(jar, start('SSO_BROKER'), op, 'alice');
    const cookie = `berth_session=${session(jar)}`;
    const listed = await t.request('GET', '/me/identities', { headers: { cookie } });
    const alice = listed.body.data.find((i: { subject: string }) => i.subject === 'alice');
    expect(alice).toBeDefined();
    const refused = await t.request('DELETE', `/me/identities/${alice.id}`, { headers: { cookie } });
    expectError(refused, 403, 'auth:request:cross-origin');
    const res = await t.request('DELETE', `/me/identities/${alice.id}`, {
      headers: { cookie, origin: new URL(t.url).origin },
    });
    expect(res.status).toBe(204);
    expectError(await t.request('GET', '/me', { headers: { cookie } }), 401, 'auth:session:invalid');
    // Linked again for the other tests of this file.
    await t.store.db
      .insertInto('identities')
      .values({
        id: 'idn-alice-again',
        principal_id: 'p-owner',
        provider: 'SSO_BROKER',
        issuer: op.issuer,
        subject: 'alice',
        email: null,
      })
      .execute();
  });
});
