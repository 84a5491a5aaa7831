import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheInvalidation } from '../../src/services/caches/invalidation.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { ORG_A, TOKENS } from '../support/world.js';

// On PostgreSQL a write's notification reaches this replica's listener a moment after the commit, through
// another connection: the answer to a write waits until it has (caches.settle), so the caller's next
// request here cannot be served what the write replaced. A gate in place of settle() shows the wait.
describe('answers to writes', () => {
  let t: TestApp;
  const settles: Array<() => void> = [];

  beforeAll(async () => {
    t = await startTestApp({
      pglite: true,
      services: (store, config) => {
        const services = createServices(store, config);
        const gated: Pick<CacheInvalidation, 'settle'> = {
          settle: () => new Promise<void>((resolve) => settles.push(resolve)),
        };
        return { ...services, caches: gated as CacheInvalidation };
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('leave only once the caches have heard of what was written; reads do not wait', async () => {
    expect(
      (await t.request('GET', `/organizations/${ORG_A}/permitted-identity-providers`, { token: TOKENS.owner })).status,
    ).toBe(200);
    expect(settles).toHaveLength(0);

    let answered = false;
    const write = t
      .request('POST', `/organizations/${ORG_A}/api-keys`, { token: TOKENS.owner, body: { data: { name: 'gate' } } })
      .finally(() => (answered = true));
    while (settles.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(answered).toBe(false);
    settles.shift()!();
    expect((await write).status).toBe(201);
  });
});
