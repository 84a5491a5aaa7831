import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { domainWorld } from '../support/domain-world.js';
import { TOKENS } from '../support/world.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    fixture: domainWorld({
      domains: [
        { id: 'd-b-x-gamma', moduleInstanceId: 'mi-b-shop', domainName: 'x.gamma.example', managedByService: false },
        {
          id: 'd-b-deep-gamma',
          moduleInstanceId: 'mi-b-shop',
          domainName: 'a.b.zeta.example',
          managedByService: false,
        },
        { id: 'd-a-delta', moduleInstanceId: 'mi-a-worker', domainName: 'mine.delta.example', managedByService: false },
        {
          id: 'd-b-cafe',
          moduleInstanceId: 'mi-b-shop',
          domainName: 'xn--caf-dma.epsilon.example',
          managedByService: false,
        },
        { id: 'd-a-legacy', moduleInstanceId: 'mi-a-web', domainName: 'legacy.berth.dev', managedByService: false },
      ],
    }),
    config: { RESERVED_ZONES: 'berth.dev, Berth.App.' },
  });
});
afterAll(async () => t?.close());

function check(name: string, options: { token?: string; moduleInstanceId?: string } = {}) {
  const query = new URLSearchParams({ name });
  if (options.moduleInstanceId !== undefined) query.set('moduleInstanceId', options.moduleInstanceId);
  return t.request('GET', `/domains/name-availability?${query}`, { token: options.token ?? TOKENS.owner });
}

async function conflictOf(name: string, options: { token?: string; moduleInstanceId?: string } = {}) {
  const res = await check(name, options);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // Only `available` and `conflict {owner, type}`: no id, no name, no organization.
  expect(Object.keys(res.body)).toEqual(['data']);
  if (res.body.data.available) {
    expect(res.body.data).toEqual({ available: true });
    return null;
  }
  expect(Object.keys(res.body.data).sort()).toEqual(['available', 'conflict']);
  expect(Object.keys(res.body.data.conflict).sort()).toEqual(['owner', 'type']);
  expect(res.text).not.toMatch(/org-|mi-|prj-|env-|d-/);
  return res.body.data.conflict as { owner: string; type: string };
}

describe('GET /domains/name-availability', () => {
  it('answers {available: true} for a free name', async () => {
    expect(await conflictOf('new.acme.example')).toBeNull();
    expect(await conflictOf('fresh.example')).toBeNull();
  });

  it('finds an exact name and tells whose it is relative to the caller', async () => {
    expect(await conflictOf('www.acme.example', { moduleInstanceId: 'mi-a-web' })).toEqual({
      owner: 'SAME_MODULE_INSTANCE',
      type: 'EXACT',
    });
    expect(await conflictOf('www.acme.example', { moduleInstanceId: 'mi-a-worker' })).toEqual({
      owner: 'SAME_ORGANIZATION',
      type: 'EXACT',
    });
    expect(await conflictOf('www.acme.example')).toEqual({ owner: 'SAME_ORGANIZATION', type: 'EXACT' });
    expect(await conflictOf('shop.beta.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'EXACT' });
    expect(await conflictOf('*.beta.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'EXACT' });
  });

  it('normalizes case, the trailing dot and IDN before comparing', async () => {
    expect(await conflictOf('WWW.Acme.Example.', { moduleInstanceId: 'mi-a-web' })).toEqual({
      owner: 'SAME_MODULE_INSTANCE',
      type: 'EXACT',
    });
    expect(await conflictOf('Café.Epsilon.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'EXACT' });
    expect(await conflictOf('xn--caf-dma.epsilon.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'EXACT' });
    expect(await conflictOf('bücher.acme.example')).toBeNull();
  });

  it("refuses a name under another organization's wildcard, without saying whose", async () => {
    expect(await conflictOf('new.apps.acme.example', { token: TOKENS.otherAdmin })).toEqual({
      owner: 'OTHER_ORGANIZATION',
      type: 'WILDCARD',
    });
    expect(await conflictOf('new.beta.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'WILDCARD' });
  });

  it("allows a name under a wildcard of the caller's own organization, and names deeper than one label", async () => {
    expect(await conflictOf('new.apps.acme.example')).toBeNull();
    expect(await conflictOf('new.apps.acme.example', { moduleInstanceId: 'mi-a-worker' })).toBeNull();
    expect(await conflictOf('deep.new.apps.acme.example', { token: TOKENS.otherAdmin })).toBeNull();
  });

  it('refuses a wildcard over names another organization holds one label under it', async () => {
    expect(await conflictOf('*.gamma.example')).toEqual({ owner: 'OTHER_ORGANIZATION', type: 'SUBDOMAIN' });
    expect(await conflictOf('*.apps.acme.example', { token: TOKENS.otherAdmin })).toEqual({
      owner: 'OTHER_ORGANIZATION',
      type: 'EXACT',
    });
    // Names two labels under do not count (a wildcard covers one label), nor the caller's own names.
    expect(await conflictOf('*.zeta.example')).toBeNull();
    expect(await conflictOf('*.delta.example')).toBeNull();
    expect(await conflictOf('*.delta.example', { token: TOKENS.otherAdmin })).toEqual({
      owner: 'OTHER_ORGANIZATION',
      type: 'SUBDOMAIN',
    });
  });

  it("reserves the platform's zones and everything under them for the service", async () => {
    for (const name of ['berth.dev', 'app.berth.dev', '*.berth.dev', 'a.b.berth.dev', 'BERTH.APP.', 'x.berth.app']) {
      expect(await conflictOf(name), name).toEqual({ owner: 'SERVICE', type: 'RESERVED' });
    }
    expect(await conflictOf('notberth.dev')).toBeNull();
  });

  it('ranks RESERVED over EXACT, and EXACT over WILDCARD', async () => {
    expect(await conflictOf('legacy.berth.dev', { moduleInstanceId: 'mi-a-web' })).toEqual({
      owner: 'SERVICE',
      type: 'RESERVED',
    });
    expect(await conflictOf('api.apps.acme.example', { token: TOKENS.otherAdmin })).toEqual({
      owner: 'OTHER_ORGANIZATION',
      type: 'EXACT',
    });
  });

  it("counts every organization of an unscoped key as the caller's own, unless an instance says which", async () => {
    expect(await conflictOf('new.apps.acme.example', { token: TOKENS.multiOrg })).toBeNull();
    expect(
      await conflictOf('new.apps.acme.example', { token: TOKENS.multiOrg, moduleInstanceId: 'mi-b-shop' }),
    ).toEqual({
      owner: 'OTHER_ORGANIZATION',
      type: 'WILDCARD',
    });
    expect(await conflictOf('shop.beta.example', { token: TOKENS.superadmin })).toEqual({
      owner: 'SAME_ORGANIZATION',
      type: 'EXACT',
    });
  });

  it.each([
    ['com', 'public-suffix'],
    ['co.uk', 'public-suffix'],
    ['*.com', 'public-suffix'],
    ['github.io', 'public-suffix'],
    ['', 'empty'],
    ['a..example', 'empty-label'],
    ['-a.example', 'invalid-hyphen'],
    [`${'a'.repeat(64)}.example`, 'label-too-long'],
    [`${'abcdefghi.'.repeat(26)}example`, 'too-long'],
    ['a_b.example', 'invalid-character'],
    ['*.*.example', 'invalid-wildcard'],
    ['192.0.2.1', 'ip-address'],
    ['xn--zz.example', 'idn-invalid'],
  ])('answers 400 domains:name:invalid for %j (%s)', async (name, reason) => {
    const res = await check(name);
    expectError(res, 400, 'domains:name:invalid');
    expect(res.body.metadata).toEqual({ reason });
    expect(res.body.message.length).toBeGreaterThan(10);
  });

  it("answers 400 without a name, 404 for another organization's instance like an unknown one, 401 without a token", async () => {
    expectError(
      await t.request('GET', '/domains/name-availability', { token: TOKENS.owner }),
      400,
      'validation:request:invalid-query',
    );
    expectError(
      await check('new.acme.example', { moduleInstanceId: 'mi-b-shop' }),
      404,
      'domains:module-instance:not-found',
    );
    expectError(
      await check('new.acme.example', { moduleInstanceId: 'mi-nope' }),
      404,
      'domains:module-instance:not-found',
    );
    expectError(await t.request('GET', '/domains/name-availability?name=a.example'), 401, 'auth:token:missing');
  });

  it('lets viewers ask', async () => {
    expect(await conflictOf('www.acme.example', { token: TOKENS.viewer })).toEqual({
      owner: 'SAME_ORGANIZATION',
      type: 'EXACT',
    });
  });
});
