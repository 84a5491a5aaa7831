// Who may manage which keys: roles, tenants, and no key carrying more power than its manager's own.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { loggerOptions } from '../../src/http/log-serializers.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { httpRequest } from '../support/http-request.js';
import { ORG_A, ORG_B, TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const keysOf = (org: string) => `/organizations/${org}/api-keys`;
const create = (token: string, data: unknown, org = ORG_A) => t.request('POST', keysOf(org), { token, body: { data } });
const revoke = (token: string, keyId: string, org = ORG_A) => t.request('DELETE', `${keysOf(org)}/${keyId}`, { token });
const idps = (token: string, org = ORG_A) =>
  t.request('GET', `/organizations/${org}/permitted-identity-providers`, { token });
/** An error body as two answers are compared: without the request id. */
const comparable = (body: Record<string, unknown>) => ({ ...body, requestId: undefined });

describe('managing keys takes an admin or owner of the organization', () => {
  const calls = (org: string) => [
    (token: string) => create(token, {}, org),
    (token: string) => t.request('GET', keysOf(org), { token }),
    (token: string) => revoke(token, 'k-viewer', org),
  ];

  it('refuses members and viewers with 403 on every route', async () => {
    for (const call of calls(ORG_A)) {
      expectError(await call(TOKENS.member), 403, 'auth:permission:denied');
      expectError(await call(TOKENS.viewer), 403, 'auth:permission:denied');
    }
    expect((await idps(TOKENS.viewer)).status).toBe(200);
  });

  it('answers a non-member exactly as for an organization that does not exist, also to a superadmin', async () => {
    for (const [i, call] of calls(ORG_A).entries()) {
      const foreign = await call(TOKENS.otherAdmin);
      const missing = await calls('org-nope')[i]!(TOKENS.otherAdmin);
      expectError(foreign, 403, 'auth:permission:denied');
      expect(comparable(missing.body)).toEqual(comparable(foreign.body));
      expectError(await calls('org-nope')[i]!(TOKENS.superadmin), 403, 'auth:permission:denied');
    }
  });

  it('keeps a key scoped to one organization out of another, whatever its principal may do there', async () => {
    // p-multi is an admin of both organizations; the key it makes in org B acts in org B only.
    const scopedToB = (await create(TOKENS.multiOrg, {}, ORG_B)).body.data;
    expect(scopedToB.organizationId).toBe(ORG_B);
    expect((await create(scopedToB.token, {}, ORG_B)).status).toBe(201);
    expectError(await create(scopedToB.token, {}), 403, 'auth:permission:denied');
    expectError(await t.request('GET', keysOf(ORG_A), { token: scopedToB.token }), 403, 'auth:permission:denied');
    expectError(await idps(scopedToB.token), 403, 'auth:permission:denied');
    expect((await idps(TOKENS.multiOrg)).status).toBe(200);
  });

  it('lets a superadmin manage the keys of any organization', async () => {
    const made = await create(TOKENS.superadmin, { principalId: 'p-other' }, ORG_B);
    expect(made.status).toBe(201);
    expect((await revoke(TOKENS.superadmin, made.body.data.id, ORG_B)).status).toBe(204);
  });
});

describe('no key carries more power than its manager', () => {
  it('lets an admin make keys for itself and for members with lesser roles, which act as them', async () => {
    const forMember = await create(TOKENS.admin, { principalId: 'p-member' });
    expect(forMember.status).toBe(201);
    expect(forMember.body.data).toMatchObject({ principalId: 'p-member', createdBy: 'p-admin' });
    const categories = { data: { givenId: 'from-member-key', name: 'M', sortOrder: 1 } };
    const asMember = await t.request('POST', '/module-categories', {
      token: forMember.body.data.token,
      body: categories,
    });
    expectError(asMember, 403, 'auth:permission:denied');
    expect((await create(TOKENS.admin, { principalId: 'p-admin' })).status).toBe(201);
  });

  it("refuses an admin a key for an owner, and the revocation of an owner's key", async () => {
    expectError(await create(TOKENS.admin, { principalId: 'p-owner' }), 403, 'auth:permission:denied');
    expectError(await revoke(TOKENS.admin, 'k-owner'), 403, 'auth:permission:denied');
    expect((await idps(TOKENS.owner)).status).toBe(200);
    const ownerKey = (await create(TOKENS.owner, {})).body.data;
    expectError(await revoke(TOKENS.admin, ownerKey.id), 403, 'auth:permission:denied');
    expect((await revoke(TOKENS.owner, ownerKey.id)).status).toBe(204);
  });

  it("lets an owner make and revoke an admin's keys", async () => {
    const adminKey = (await create(TOKENS.owner, { principalId: 'p-admin' })).body.data;
    expect((await create(adminKey.token, {})).status).toBe(201);
    expect((await revoke(TOKENS.owner, adminKey.id)).status).toBe(204);
    expectError(await idps(adminKey.token), 401, 'auth:token:invalid');
  });

  it('answers a principal outside the organization, or a superadmin, like one that does not exist', async () => {
    const answers = await Promise.all(
      ['p-nope', 'p-other', 'p-root'].map((principalId) => create(TOKENS.owner, { principalId })),
    );
    for (const res of answers) expectError(res, 404, 'api-keys:principal:not-found');
    const [missing, outsider, root] = answers.map((r) =>
      JSON.stringify(comparable(r.body)).replace(/p-[a-z]+/g, '<id>'),
    );
    expect(outsider).toBe(missing);
    expect(root).toBe(missing);
  });

  it("lets only a superadmin make a superadmin's key, which then acts in that organization only", async () => {
    const rootKey = await create(TOKENS.superadmin, { principalId: 'p-root' });
    expect(rootKey.status).toBe(201);
    expect((await idps(rootKey.body.data.token)).status).toBe(200);
    expectError(await idps(rootKey.body.data.token, ORG_B), 403, 'auth:permission:denied');
    expectError(await revoke(TOKENS.owner, rootKey.body.data.id), 403, 'auth:permission:denied');
  });
});

describe('the audit log', () => {
  it('has one line per create and revoke naming actor, key, organization and principal, and never the token', async () => {
    let log = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    const app = await buildApp({
      config: t.config,
      services: t.services,
      logger: { ...loggerOptions('info'), stream },
    });
    let token = '';
    let id = '';
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const res = await httpRequest(url, 'POST', keysOf(ORG_A), {
        token: TOKENS.admin,
        body: { data: { principalId: 'p-viewer', name: 'audited' } },
      });
      ({ id, token } = res.body.data);
      expect((await httpRequest(url, 'DELETE', `${keysOf(ORG_A)}/${id}`, { token: TOKENS.owner })).status).toBe(204);
    } finally {
      await app.close();
    }
    const audit = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => line.audit !== undefined);
    const common = { organizationId: ORG_A, keyId: id, principalId: 'p-viewer' };
    expect(audit).toEqual([
      expect.objectContaining({
        audit: 'api-key.created',
        actorPrincipalId: 'p-admin',
        actorKeyId: 'k-admin',
        ...common,
      }),
      expect.objectContaining({
        audit: 'api-key.revoked',
        actorPrincipalId: 'p-owner',
        actorKeyId: 'k-owner',
        ...common,
      }),
    ]);
    expect(audit.every((line) => typeof line.requestId === 'string')).toBe(true);
    expect(log).not.toContain(token);
    expect(log).not.toContain(token.slice(`berth_${id}_`.length));
  });
});
