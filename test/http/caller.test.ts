// GET /me: who the bearer token is and which organizations it may act in (issue 13), black-box over HTTP.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const MORE = {
  twoRolesUnscoped: 'berth_k-two_two-roles-secret-000000000',
  twoRolesScopedB: 'berth_k-two-b_two-roles-b-secret-00000',
  rootMember: 'berth_k-root2_root-member-secret-0000',
  rootScopedA: 'berth_k-root2-a_root-a-secret-0000000',
  rootScopedB: 'berth_k-root2-b_root-b-secret-0000000',
  expiring: 'berth_k-expiring_expiring-secret-00000',
} as const;
const EXPIRES = '2999-06-01T00:00:00.000Z';

function fixture(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    organizations: [{ id: 'org-0', name: 'Org A', permittedIdentityProviders: [] }],
    principals: [
      {
        id: 'p-two',
        name: 'Two roles',
        memberships: [
          { organizationId: ORG_A, role: 'owner' },
          { organizationId: ORG_B, role: 'viewer' },
          // Same name as org A: ordered by id ('org-0' before 'org-a').
          { organizationId: 'org-0', role: 'member' },
        ],
        apiKeys: [
          { id: 'k-two', token: MORE.twoRolesUnscoped },
          { id: 'k-two-b', token: MORE.twoRolesScopedB, organizationId: ORG_B },
          { id: 'k-expiring', token: MORE.expiring, expiresAt: EXPIRES },
        ],
      },
      {
        id: 'p-root2',
        name: 'Root with a membership',
        superadmin: true,
        memberships: [{ organizationId: ORG_B, role: 'viewer' }],
        apiKeys: [
          { id: 'k-root2', token: MORE.rootMember },
          { id: 'k-root2-a', token: MORE.rootScopedA, organizationId: ORG_A },
          { id: 'k-root2-b', token: MORE.rootScopedB, organizationId: ORG_B },
        ],
      },
    ],
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture() });
});
afterAll(async () => t.close());

const me = (token?: string) => t.request('GET', '/me', { token });
const A = { id: ORG_A, name: 'Org A' };
const B = { id: ORG_B, name: 'Org B' };

async function profile(token: string) {
  const res = await me(token);
  expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({
    status: 200,
    body: undefined,
  });
  expect(Object.keys(res.body)).toEqual(['data']);
  return res.body.data;
}

describe('GET /me', () => {
  it.each([
    ['owner, key scoped to org A', TOKENS.owner, 'p-owner', 'Owner', 'k-owner', ORG_A, [{ ...A, role: 'owner' }]],
    ['owner, unscoped key', TOKENS.ownerUnscoped, 'p-owner', 'Owner', 'k-owner2', undefined, [{ ...A, role: 'owner' }]],
    ['admin, key scoped to org A', TOKENS.admin, 'p-admin', 'Admin', 'k-admin', ORG_A, [{ ...A, role: 'admin' }]],
    ['member, unscoped key', TOKENS.member, 'p-member', 'Member', 'k-member', undefined, [{ ...A, role: 'member' }]],
    ['viewer, key scoped to org A', TOKENS.viewer, 'p-viewer', 'Viewer', 'k-viewer', ORG_A, [{ ...A, role: 'viewer' }]],
    [
      'admin of org B only',
      TOKENS.otherAdmin,
      'p-other',
      'Other org admin',
      'k-other',
      ORG_B,
      [{ ...B, role: 'admin' }],
    ],
    [
      'member of two organizations, unscoped key',
      TOKENS.multiOrg,
      'p-multi',
      'In two orgs',
      'k-multi',
      undefined,
      [
        { ...A, role: 'admin' },
        { ...B, role: 'admin' },
      ],
    ],
    [
      'three memberships, unscoped key: by name, then id',
      MORE.twoRolesUnscoped,
      'p-two',
      'Two roles',
      'k-two',
      undefined,
      [
        { id: 'org-0', name: 'Org A', role: 'member' },
        { ...A, role: 'owner' },
        { ...B, role: 'viewer' },
      ],
    ],
    [
      'three memberships, key scoped to org B: that one only',
      MORE.twoRolesScopedB,
      'p-two',
      'Two roles',
      'k-two-b',
      ORG_B,
      [{ ...B, role: 'viewer' }],
    ],
  ] as const)('answers %s', async (_label, token, principalId, name, keyId, organizationId, organizations) => {
    const data = await profile(token);
    expect(data).toEqual({
      principal: { id: principalId, name, superadmin: false },
      key: { id: keyId, ...(organizationId === undefined ? {} : { organizationId }) },
      organizations,
    });
  });

  it('lists no organization for a superadmin with no membership, who may still name any organization', async () => {
    const data = await profile(TOKENS.superadmin);
    expect(data).toEqual({
      principal: { id: 'p-root', name: 'Root', superadmin: true },
      key: { id: 'k-root' },
      organizations: [],
    });
    expect((await t.request('GET', `/organizations/${ORG_A}/log-catalog`, { token: TOKENS.superadmin })).status).toBe(
      200,
    );
  });

  it("lists a superadmin's memberships with their roles, and the organization its key is scoped to", async () => {
    expect((await profile(MORE.rootMember)).organizations).toEqual([{ ...B, role: 'viewer' }]);
    expect(await profile(MORE.rootScopedA)).toEqual({
      principal: { id: 'p-root2', name: 'Root with a membership', superadmin: true },
      key: { id: 'k-root2-a', organizationId: ORG_A },
      // No membership in org A: the key acts there as an owner.
      organizations: [{ ...A, role: 'owner' }],
    });
    expect((await profile(MORE.rootScopedB)).organizations).toEqual([{ ...B, role: 'viewer' }]);
  });

  it('shows the expiry of a key that has one', async () => {
    expect((await profile(MORE.expiring)).key).toEqual({ id: 'k-expiring', expiresAt: EXPIRES });
  });

  it('shows the name, organization and expiry of a key created through the API', async () => {
    const created = await t.request('POST', `/organizations/${ORG_A}/api-keys`, {
      token: TOKENS.owner,
      body: { data: { name: 'log explorer', expiresInDays: 7, principalId: 'p-viewer' } },
    });
    expect(created.status).toBe(201);
    const { id, token, expiresAt } = created.body.data;
    expect(await profile(token)).toEqual({
      principal: { id: 'p-viewer', name: 'Viewer', superadmin: false },
      key: { id, name: 'log explorer', organizationId: ORG_A, expiresAt },
      organizations: [{ ...A, role: 'viewer' }],
    });
  });

  it('never shows the token, its secret or its hash', async () => {
    for (const token of [TOKENS.owner, TOKENS.superadmin, MORE.expiring]) {
      const res = await me(token);
      expect(res.status).toBe(200);
      const secret = token.slice(token.lastIndexOf('_') + 1);
      expect(res.text).not.toContain(secret);
      expect(res.text).not.toContain(createHash('sha256').update(token).digest('hex'));
      expect(res.text).not.toMatch(/token|hash/i);
    }
  });

  it('answers 401 to a missing, unknown, expired or revoked token', async () => {
    expectError(await me(), 401, 'auth:token:missing');
    expectError(await me('berth_k-nope_nope-secret-000000000000000'), 401, 'auth:token:invalid');
    expectError(await me(TOKENS.expired), 401, 'auth:token:invalid');
    expectError(await me(TOKENS.revoked), 401, 'auth:token:invalid');
  });

  it('stops answering for a key once it is revoked', async () => {
    const created = await t.request('POST', `/organizations/${ORG_A}/api-keys`, {
      token: TOKENS.owner,
      body: { data: {} },
    });
    expect(created.status).toBe(201);
    expect((await me(created.body.data.token)).status).toBe(200);
    const revoked = await t.request('DELETE', `/organizations/${ORG_A}/api-keys/${created.body.data.id}`, {
      token: TOKENS.owner,
    });
    expect(revoked.status).toBe(204);
    expectError(await me(created.body.data.token), 401, 'auth:token:invalid');
  });
});
