import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { ORG_A, ORG_B, TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const create = (token: string | undefined, data: unknown) =>
  t.request('POST', '/module-categories', { token, body: { data } });

describe('POST /module-categories', () => {
  it('creates a category: 201, Location, and the assigned id and timestamps', async () => {
    const res = await create(TOKENS.owner, {
      givenId: 'databases',
      name: 'Databases',
      sortOrder: 10,
      description: 'SQL and friends',
      icon: 'db',
    });
    expect(res.status).toBe(201);
    const c = res.body.data;
    expect(c).toMatchObject({
      givenId: 'databases',
      name: 'Databases',
      sortOrder: 10,
      description: 'SQL and friends',
      icon: 'db',
      organizationId: ORG_A,
    });
    expect(typeof c.id).toBe('string');
    expect(new Date(c.createdAt).toISOString()).toBe(c.createdAt);
    expect(c.updatedAt).toBe(c.createdAt);
    expect(res.headers.get('location')).toBe(`/module-categories/${c.id}`);
    expect(Object.keys(c).sort()).toEqual([
      'createdAt',
      'description',
      'givenId',
      'icon',
      'id',
      'name',
      'organizationId',
      'sortOrder',
      'updatedAt',
    ]);

    const read = await t.request('GET', res.headers.get('location')!, { token: TOKENS.viewer });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(c);
  });

  it('omits optional fields that were not given', async () => {
    const res = await create(TOKENS.admin, { givenId: 'minimal', name: 'Minimal', sortOrder: 0 });
    expect(res.status).toBe(201);
    expect(res.body.data.description).toBeUndefined();
    expect(res.body.data.icon).toBeUndefined();
  });

  it('answers 409 for a givenId already used in the organization, and allows it in another one', async () => {
    expect((await create(TOKENS.owner, { givenId: 'dup', name: 'One', sortOrder: 1 })).status).toBe(201);
    expectError(
      await create(TOKENS.admin, { givenId: 'dup', name: 'Two', sortOrder: 2 }),
      409,
      'module-categories:category:given-id-taken',
    );
    expect((await create(TOKENS.otherAdmin, { givenId: 'dup', name: 'Elsewhere', sortOrder: 1 })).status).toBe(201);
  });

  it('answers exactly one 201 when many requests race for one givenId', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(TOKENS.owner, { givenId: 'race', name: `R${i}`, sortOrder: i })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(7);
  });

  it('creates a global category for a superadmin key without organization', async () => {
    const res = await create(TOKENS.superadmin, { givenId: 'global-one', name: 'Global', sortOrder: -5 });
    expect(res.status).toBe(201);
    expect(res.body.data.organizationId).toBeUndefined();
    const list = await t.request('GET', '/module-categories', { token: TOKENS.otherAdmin });
    expect(list.body.data.map((c: { givenId: string }) => c.givenId)).toContain('global-one');
  });

  it('refuses viewers and members with 403', async () => {
    expectError(
      await create(TOKENS.viewer, { givenId: 'nope', name: 'No', sortOrder: 1 }),
      403,
      'auth:permission:denied',
    );
    expectError(
      await create(TOKENS.member, { givenId: 'nope', name: 'No', sortOrder: 1 }),
      403,
      'auth:permission:denied',
    );
  });

  it("answers 422 when an unscoped key's principal is in several organizations", async () => {
    expectError(
      await create(TOKENS.multiOrg, { givenId: 'amb', name: 'A', sortOrder: 1 }),
      422,
      'module-categories:organization:ambiguous',
    );
  });

  it('uses the single organization of an unscoped key', async () => {
    const res = await create(TOKENS.ownerUnscoped, { givenId: 'unscoped', name: 'U', sortOrder: 1 });
    expect(res.status).toBe(201);
    expect(res.body.data.organizationId).toBe(ORG_A);
  });

  it('answers 401 without a token, with a bad one, and with expired or revoked keys', async () => {
    const body = { givenId: 'x', name: 'X', sortOrder: 1 };
    expectError(await create(undefined, body), 401, 'auth:token:missing');
    expectError(await create('garbage', body), 401, 'auth:token:invalid');
    expectError(await create(TOKENS.expired, body), 401, 'auth:token:invalid');
    expectError(await create(TOKENS.revoked, body), 401, 'auth:token:invalid');
  });

  const badBodies: [string, unknown, string][] = [
    ['missing givenId', { name: 'N', sortOrder: 1 }, 'body.data.givenId'],
    ['missing name', { givenId: 'ok', sortOrder: 1 }, 'body.data.name'],
    ['missing sortOrder', { givenId: 'ok', name: 'N' }, 'body.data.sortOrder'],
    ['uppercase givenId', { givenId: 'Bad', name: 'N', sortOrder: 1 }, 'body.data.givenId'],
    ['givenId ending in a hyphen', { givenId: 'bad-', name: 'N', sortOrder: 1 }, 'body.data.givenId'],
    ['givenId of 65 chars', { givenId: 'a'.repeat(65), name: 'N', sortOrder: 1 }, 'body.data.givenId'],
    ['empty name', { givenId: 'ok', name: '', sortOrder: 1 }, 'body.data.name'],
    ['name of 101 chars', { givenId: 'ok', name: 'n'.repeat(101), sortOrder: 1 }, 'body.data.name'],
    ['sortOrder as a string', { givenId: 'ok', name: 'N', sortOrder: '1' }, 'body.data.sortOrder'],
    ['sortOrder fractional', { givenId: 'ok', name: 'N', sortOrder: 1.5 }, 'body.data.sortOrder'],
    ['sortOrder over 32 bits', { givenId: 'ok', name: 'N', sortOrder: 2 ** 31 }, 'body.data.sortOrder'],
    [
      'description too long',
      { givenId: 'ok', name: 'N', sortOrder: 1, description: 'd'.repeat(2001) },
      'body.data.description',
    ],
    ['icon too long', { givenId: 'ok', name: 'N', sortOrder: 1, icon: 'i'.repeat(513) }, 'body.data.icon'],
    ['name not a string', { givenId: 'ok', name: 5, sortOrder: 1 }, 'body.data.name'],
    ['read-only id', { givenId: 'ok', name: 'N', sortOrder: 1, id: 'mine' }, 'body.data.id'],
    [
      'read-only createdAt',
      { givenId: 'ok', name: 'N', sortOrder: 1, createdAt: '2024-01-01T00:00:00Z' },
      'body.data.createdAt',
    ],
    [
      'read-only organizationId',
      { givenId: 'ok', name: 'N', sortOrder: 1, organizationId: ORG_B },
      'body.data.organizationId',
    ],
    ['unknown field', { givenId: 'ok', name: 'N', sortOrder: 1, colour: 'red' }, 'body.data.colour'],
  ];
  it.each(badBodies)('answers 400 naming the field for %s', async (_name, data, field) => {
    const res = await create(TOKENS.owner, data);
    expectError(res, 400, 'validation:request:invalid-body');
    const items: string[] = res.body.details[0].items;
    expect(
      items.some((i) => i.startsWith(`${field}:`)),
      items.join('; '),
    ).toBe(true);
  });

  it('names every bad field at once', async () => {
    const res = await create(TOKENS.owner, { givenId: 'BAD', name: '', sortOrder: 'x' });
    expect(res.body.details[0].items).toHaveLength(3);
  });

  it('rejects bodies that are not {data: …}', async () => {
    expectError(
      await t.request('POST', '/module-categories', {
        token: TOKENS.owner,
        body: { givenId: 'x', name: 'X', sortOrder: 1 },
      }),
      400,
      'validation:request:invalid-body',
    );
    expectError(
      await t.request('POST', '/module-categories', { token: TOKENS.owner, body: [] }),
      400,
      'validation:request:invalid-body',
    );
    expectError(
      await t.request('POST', '/module-categories', { token: TOKENS.owner, body: null }),
      400,
      'validation:request:invalid-body',
    );
    expectError(
      await t.request('POST', '/module-categories', {
        token: TOKENS.owner,
        body: { data: { givenId: 'x', name: 'X', sortOrder: 1 }, extra: 1 },
      }),
      400,
      'validation:request:invalid-body',
    );
    expectError(
      await t.request('POST', '/module-categories', {
        token: TOKENS.owner,
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation:request:invalid-body',
    );
  });

  it('does not keep anything from a rejected request', async () => {
    await create(TOKENS.owner, { givenId: 'ghost', name: 'G', sortOrder: 1, id: 'x' });
    const list = await t.request('GET', '/module-categories', { token: TOKENS.owner });
    expect(list.body.data.map((c: { givenId: string }) => c.givenId)).not.toContain('ghost');
  });
});

describe('GET /module-categories', () => {
  it("lists the caller's organization's and global categories by sortOrder then name, and no other organization's", async () => {
    await create(TOKENS.owner, { givenId: 'zeta', name: 'Zeta', sortOrder: 3 });
    await create(TOKENS.owner, { givenId: 'alpha', name: 'Alpha', sortOrder: 3 });
    await create(TOKENS.otherAdmin, { givenId: 'secret-b', name: 'B only', sortOrder: 3 });
    const res = await t.request('GET', '/module-categories', { token: TOKENS.viewer });
    expect(res.status).toBe(200);
    const items: { sortOrder: number; name: string; organizationId?: string; givenId: string }[] = res.body.data;
    const sorted = [...items].sort(
      (a, b) => a.sortOrder - b.sortOrder || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    expect(items).toEqual(sorted);
    expect(items.every((c) => c.organizationId === undefined || c.organizationId === ORG_A)).toBe(true);
    expect(items.map((c) => c.givenId)).not.toContain('secret-b');
    expect(items.findIndex((c) => c.givenId === 'alpha')).toBeLessThan(items.findIndex((c) => c.givenId === 'zeta'));
  });

  it('answers 401 without a token', async () => {
    expectError(await t.request('GET', '/module-categories'), 401, 'auth:token:missing');
  });
});

describe('GET /module-categories/{id}', () => {
  it("answers another organization's category like a missing one", async () => {
    const b = await create(TOKENS.otherAdmin, { givenId: 'b-private', name: 'B', sortOrder: 1 });
    const other = await t.request('GET', `/module-categories/${b.body.data.id}`, { token: TOKENS.owner });
    const missing = await t.request('GET', '/module-categories/does-not-exist', { token: TOKENS.owner });
    expectError(other, 404, 'module-categories:category:not-found');
    expectError(missing, 404, 'module-categories:category:not-found');
  });

  it('rejects a malformed id with 400', async () => {
    expectError(
      await t.request('GET', `/module-categories/${'x'.repeat(200)}`, { token: TOKENS.owner }),
      400,
      'validation:request:invalid-params',
    );
  });
});
