import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { ORG_A, ORG_B, TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const path = (id: string) => `/organizations/${encodeURIComponent(id)}/permitted-identity-providers`;

describe('GET /organizations/{id}/permitted-identity-providers', () => {
  it("lists the organization's providers in the spec's order", async () => {
    const res = await t.request('GET', path(ORG_A), { token: TOKENS.owner });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: ['EMAIL_PASSWORD', 'CODE_HOST_2', 'SSO_BROKER'] });
  });

  it('answers any member, including a viewer', async () => {
    for (const token of [TOKENS.viewer, TOKENS.member, TOKENS.admin, TOKENS.multiOrg]) {
      const res = await t.request('GET', path(ORG_A), { token });
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(3);
    }
  });

  it('answers an empty list for an organization with no providers', async () => {
    const res = await t.request('GET', path('org-empty'), { token: TOKENS.superadmin });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });

  it('lets a superadmin read any organization', async () => {
    const res = await t.request('GET', path(ORG_B), { token: TOKENS.superadmin });
    expect(res.body).toEqual({ data: ['SOCIAL_1'] });
  });

  it('answers the same 403 for another organization and for one that does not exist', async () => {
    const other = await t.request('GET', path(ORG_B), { token: TOKENS.owner });
    const missing = await t.request('GET', path('org-nope'), { token: TOKENS.owner });
    expectError(other, 403, 'auth:permission:denied');
    expectError(missing, 403, 'auth:permission:denied');
    expect({ ...other.body, requestId: '' }).toEqual({ ...missing.body, requestId: '' });
  });

  it('refuses a key scoped to another organization even when the principal is a member', async () => {
    const res = await t.request('GET', path(ORG_B), { token: TOKENS.owner });
    expectError(res, 403, 'auth:permission:denied');
  });

  it('answers 401 without a token, with a bad token, and with expired or revoked keys', async () => {
    expectError(await t.request('GET', path(ORG_A)), 401, 'auth:token:missing');
    expectError(await t.request('GET', path(ORG_A), { token: 'berth_nope_nope-nope-nope' }), 401, 'auth:token:invalid');
    expectError(await t.request('GET', path(ORG_A), { token: TOKENS.expired }), 401, 'auth:token:invalid');
    expectError(await t.request('GET', path(ORG_A), { token: TOKENS.revoked }), 401, 'auth:token:invalid');
    expectError(
      await t.request('GET', path(ORG_A), { headers: { authorization: `Basic ${TOKENS.owner}` } }),
      401,
      'auth:token:invalid',
    );
  });

  it('rejects malformed ids with 400', async () => {
    expectError(
      await t.request('GET', path('x'.repeat(129)), { token: TOKENS.owner }),
      400,
      'validation:request:invalid-params',
    );
    expectError(
      await t.request('GET', path('a\u0001b'), { token: TOKENS.owner }),
      400,
      'validation:request:invalid-params',
    );
    expectError(
      await t.request('GET', path('a\nb'), { token: TOKENS.owner }),
      400,
      'validation:request:invalid-params',
    );
    expectError(
      await t.request('GET', '/organizations//permitted-identity-providers', { token: TOKENS.owner }),
      400,
      'validation:request:invalid-params',
    );
  });

  it('accepts a 128-character id (and answers 403 for it, as it does not exist)', async () => {
    expectError(await t.request('GET', path('x'.repeat(128)), { token: TOKENS.owner }), 403, 'auth:permission:denied');
  });
});

describe('malformed URLs', () => {
  it('answers a bad percent-escape with the error object', async () => {
    const res = await t.request('GET', '/organizations/%zz/permitted-identity-providers', { token: TOKENS.owner });
    expectError(res, 400, 'validation:request:invalid-params');
  });
});
