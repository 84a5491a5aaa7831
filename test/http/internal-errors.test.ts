import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  // Break the database under the running app: the next category query fails unexpectedly.
  await sql`drop table module_categories`.execute(t.store.db);
});
afterAll(async () => t.close());

describe('unexpected errors', () => {
  it('answer 500 with no internal details for ordinary callers', async () => {
    const res = await t.request('GET', '/module-categories', { token: TOKENS.owner });
    expectError(res, 500, 'internal:server:unexpected');
    expect(res.body.isInternal).toBeUndefined();
    expect(res.body.metadata).toBeUndefined();
    expect(res.text).not.toMatch(/module_categories/);
  });

  it('show isInternal and metadata to a superadmin', async () => {
    const res = await t.request('GET', '/module-categories', { token: TOKENS.superadmin });
    expectError(res, 500, 'internal:server:unexpected');
    expect(res.body.isInternal).toBe(true);
    expect(res.body.metadata.message).toMatch(/module_categories/);
  });

  it('leave the process serving', async () => {
    const res = await t.request('GET', '/organizations/org-a/permitted-identity-providers', { token: TOKENS.owner });
    expect(res.status).toBe(200);
  });
});
