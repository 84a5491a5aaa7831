import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { ORG_A, ORG_B, TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const keysOf = (org: string) => `/organizations/${org}/api-keys`;
const create = (token: string, data: unknown, org = ORG_A) => t.request('POST', keysOf(org), { token, body: { data } });
const list = (token: string, org = ORG_A, query = '') => t.request('GET', `${keysOf(org)}${query}`, { token });
const revoke = (token: string, keyId: string, org = ORG_A) => t.request('DELETE', `${keysOf(org)}/${keyId}`, { token });
const idps = (token: string, org = ORG_A) =>
  t.request('GET', `/organizations/${org}/permitted-identity-providers`, { token });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every key of the organization, walking all pages. */
async function listAll(token: string, org = ORG_A): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  do {
    const res = await list(token, org, `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.meta.nextCursor;
  } while (cursor !== undefined);
  return out;
}

describe('POST /organizations/{organizationId}/api-keys', () => {
  it('creates a key scoped to the organization whose token works at once, and shows the token in that answer only', async () => {
    const res = await create(TOKENS.owner, { name: 'CI deploys', expiresInDays: 30 });
    expect(res.status).toBe(201);
    const key = res.body.data;
    expect(Object.keys(key).sort()).toEqual(
      ['createdAt', 'createdBy', 'expiresAt', 'id', 'name', 'organizationId', 'principalId', 'token'].sort(),
    );
    expect(key).toMatchObject({
      principalId: 'p-owner',
      organizationId: ORG_A,
      name: 'CI deploys',
      createdBy: 'p-owner',
    });
    expect(key.token).toMatch(new RegExp(`^berth_${key.id}_[A-Za-z0-9_-]{32}$`));
    expect(new Date(key.createdAt).toISOString()).toBe(key.createdAt);
    const days = (Date.parse(key.expiresAt) - Date.parse(key.createdAt)) / 86_400_000;
    expect(days).toBeGreaterThan(29.99);
    expect(days).toBeLessThan(30.01);

    expect((await idps(key.token)).status).toBe(200);

    const listed = (await listAll(TOKENS.admin)).find((k) => k.id === key.id);
    const { token: _token, ...withoutToken } = key;
    expect(listed).toEqual(withoutToken);
  });

  it('never puts a token or its hash in a list', async () => {
    const made = await Promise.all([1, 2, 3].map(async () => (await create(TOKENS.admin, {})).body.data));
    const res = await list(TOKENS.owner, ORG_A, '?limit=100');
    for (const { id, token } of made) {
      expect(res.text).not.toContain(token);
      // The secret (base64url, so it may hold `_` itself): everything after `berth_<id>_`.
      expect(res.text).not.toContain(token.slice(`berth_${id}_`.length));
      expect(res.text).not.toContain(createHash('sha256').update(token).digest('hex'));
    }
    for (const key of res.body.data) expect(key.token).toBeUndefined();
  });

  it('makes a key that expires at the given time: it works before and is refused after', async () => {
    const expiresAt = new Date(Date.now() + 3_000).toISOString();
    const res = await create(TOKENS.owner, { expiresAt });
    expect(res.status).toBe(201);
    expect(res.body.data.expiresAt).toBe(expiresAt);
    expect((await idps(res.body.data.token)).status).toBe(200);
    await sleep(Date.parse(expiresAt) - Date.now() + 50);
    expectError(await idps(res.body.data.token), 401, 'auth:token:invalid');
  });

  it('answers 422 for an expiry in the past, too far away, or given twice', async () => {
    const past = new Date(Date.now() - 1_000).toISOString();
    const far = new Date(Date.now() + 3651 * 86_400_000).toISOString();
    for (const data of [{ expiresAt: past }, { expiresAt: far }, { expiresAt: far, expiresInDays: 1 }]) {
      expectError(await create(TOKENS.owner, data), 422, 'api-keys:expiry:invalid');
    }
  });

  const badBodies: [string, unknown, string][] = [
    ['an unknown field', { data: { scope: 'all' } }, 'body.data.scope'],
    ['a read-only id', { data: { id: 'key-mine' } }, 'body.data.id'],
    ['a token of its own', { data: { token: 'berth_x_y' } }, 'body.data.token'],
    ['another organization', { data: { organizationId: ORG_B } }, 'body.data.organizationId'],
    ['a field beside data', { data: {}, principalId: 'p-admin' }, 'body.principalId'],
    ['no data', {}, 'body.data'],
    ['an empty name', { data: { name: '' } }, 'body.data.name'],
    ['a name of 101 characters', { data: { name: 'n'.repeat(101) } }, 'body.data.name'],
    ['expiresInDays of 0', { data: { expiresInDays: 0 } }, 'body.data.expiresInDays'],
    ['expiresInDays of 3651', { data: { expiresInDays: 3651 } }, 'body.data.expiresInDays'],
    ['fractional expiresInDays', { data: { expiresInDays: 1.5 } }, 'body.data.expiresInDays'],
    ['expiresInDays as a string', { data: { expiresInDays: '3' } }, 'body.data.expiresInDays'],
    ['expiresAt that is no date', { data: { expiresAt: 'tomorrow' } }, 'body.data.expiresAt'],
    ['principalId not a string', { data: { principalId: 7 } }, 'body.data.principalId'],
    ['an empty principalId', { data: { principalId: '' } }, 'body.data.principalId'],
    ['a principalId with a NUL', { data: { principalId: 'p-\u0000' } }, 'body.data.principalId'],
    ['a name with a NUL', { data: { name: 'a\u0000b' } }, 'body.data.name'],
    ['a name with a lone surrogate', { data: { name: 'a\ud800b' } }, 'body.data.name'],
  ];
  it.each(badBodies)('answers 400 naming the field for %s', async (_name, body, field) => {
    const res = await t.request('POST', keysOf(ORG_A), { token: TOKENS.owner, body });
    expectError(res, 400, 'validation:request:invalid-body');
    expect(res.body.details[0].items.join('\n')).toContain(field);
  });
});

describe('DELETE /organizations/{organizationId}/api-keys/{keyId}', () => {
  it('revokes a key: its very next request is refused, and the list shows who revoked it and when', async () => {
    const { id, token } = (await create(TOKENS.owner, { principalId: 'p-member' })).body.data;
    expect((await idps(token)).status).toBe(200);
    const res = await revoke(TOKENS.admin, id);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectError(await idps(token), 401, 'auth:token:invalid');
    const listed = (await listAll(TOKENS.owner)).find((k) => k.id === id)!;
    expect(listed.revokedBy).toBe('p-admin');
    expect(Date.parse(listed.revokedAt as string)).toBeLessThanOrEqual(Date.now());
  });

  it('answers 204 again for a revoked key and keeps the first revocation', async () => {
    const { id } = (await create(TOKENS.admin, {})).body.data;
    expect((await revoke(TOKENS.admin, id)).status).toBe(204);
    const first = (await listAll(TOKENS.owner)).find((k) => k.id === id)!;
    expect((await revoke(TOKENS.owner, id)).status).toBe(204);
    const again = (await listAll(TOKENS.owner)).find((k) => k.id === id)!;
    expect(again).toEqual(first);
  });

  it('lets a key revoke itself', async () => {
    const { id, token } = (await create(TOKENS.owner, {})).body.data;
    expect((await revoke(token, id)).status).toBe(204);
    expectError(await revoke(token, id), 401, 'auth:token:invalid');
  });

  it('answers 404 for a key that is not the organization’s: made up, unscoped, or of another organization', async () => {
    const foreign = (await create(TOKENS.otherAdmin, {}, ORG_B)).body.data;
    const answers = [await revoke(TOKENS.owner, 'key0000000000000000'), await revoke(TOKENS.owner, foreign.id)];
    answers.push(await revoke(TOKENS.owner, 'k-member'));
    for (const res of answers) expectError(res, 404, 'api-keys:key:not-found');
    const [made, other, unscoped] = answers.map((r) => ({ ...r.body, requestId: undefined }));
    expect(other).toEqual(made);
    expect(unscoped).toEqual(made);
    expect((await idps(foreign.token, ORG_B)).status).toBe(200);
    expect((await idps(TOKENS.member)).status).toBe(200);
  });
});

describe('GET /organizations/{organizationId}/api-keys', () => {
  it("lists the keys scoped to the organization only, not unscoped keys nor another organization's", async () => {
    const ids = (await listAll(TOKENS.owner)).map((k) => k.id);
    expect(ids).toEqual(expect.arrayContaining(['k-owner', 'k-admin', 'k-viewer']));
    for (const id of ['k-owner2', 'k-member', 'k-root', 'k-multi', 'k-other']) expect(ids).not.toContain(id);
  });

  it('pages newest first, losing and repeating nothing, with the total count', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await create(TOKENS.otherAdmin, { name: `page ${i}` }, ORG_B)).body.data.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await list(
        TOKENS.otherAdmin,
        ORG_B,
        `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.meta.limit).toBe(2);
      expect(res.body.meta.totalCount).toBeGreaterThanOrEqual(6);
      seen.push(...res.body.data.map((k: { id: string }) => k.id));
      cursor = res.body.meta.nextCursor;
      pages += 1;
    } while (cursor !== undefined);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe((await list(TOKENS.otherAdmin, ORG_B)).body.meta.totalCount);
    expect(pages).toBe(Math.ceil(seen.length / 2));
    // Created one after another, so newest first is the reverse order of creation.
    expect(seen.filter((id) => made.includes(id))).toEqual([...made].reverse());
  });

  it("refuses a tampered cursor and another organization's cursor alike", async () => {
    const pageB = await list(TOKENS.multiOrg, ORG_B, '?limit=1');
    const pageA = await list(TOKENS.multiOrg, ORG_A, '?limit=1');
    const cursorB: string = pageB.body.meta.nextCursor;
    const cursorA: string = pageA.body.meta.nextCursor;
    // A middle character: the last one of base64url may carry only padding bits and decode the same.
    const middle = Math.floor(cursorA.length / 2);
    const tampered = `${cursorA.slice(0, middle)}${cursorA[middle] === 'A' ? 'B' : 'A'}${cursorA.slice(middle + 1)}`;
    for (const cursor of [cursorB, tampered, 'garbage']) {
      expectError(
        await list(TOKENS.multiOrg, ORG_A, `?cursor=${encodeURIComponent(cursor)}`),
        400,
        'api-keys:cursor:invalid',
      );
    }
    expectError(await list(TOKENS.owner, ORG_A, '?limit=101'), 400, 'validation:request:invalid-query');
  });
});
