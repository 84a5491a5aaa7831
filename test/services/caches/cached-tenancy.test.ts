import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedTenancy } from '../../../src/services/caches/cached-tenancy.js';
import { CacheInvalidation } from '../../../src/services/caches/invalidation.js';
import { openChangeFeed } from '../../../src/store/change-feed.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { storeTenancy, type Tenancy } from '../../../src/store/tenancy.js';
import { loadTwoOrgs } from './two-orgs.js';
import { pgliteTarget } from '../../support/database.js';

let store: Store;
let caches: CacheInvalidation;
let tenancy: Tenancy;
let loads = 0;

beforeAll(async () => {
  store = await openStore(pgliteTarget());
  await migrate(store);
  await loadTwoOrgs(store);
  caches = new CacheInvalidation(openChangeFeed(store));
  const counted = storeTenancy(store.db);
  const counting: Tenancy = Object.fromEntries(
    Object.entries(counted).map(([name, fn]) => [
      name,
      (arg: never) => {
        loads += 1;
        return (fn as (a: never) => unknown)(arg);
      },
    ]),
  ) as unknown as Tenancy;
  tenancy = cachedTenancy(counting, caches, { maxEntries: 100, missingTtlMs: 1_000 });
  while (!caches.active) await new Promise((resolve) => setTimeout(resolve, 10));
}, 60_000);

afterAll(async () => {
  await caches.close();
  await store.close();
});

describe('tenancy answered from memory', () => {
  it('asks the database once for repeated lookups of the same ids', async () => {
    loads = 0;
    for (let i = 0; i < 5; i++) {
      expect(await tenancy.moduleInstance('mi-a')).toBe('org-a');
      expect(await tenancy.environment('env-b')).toBe('org-b');
      expect(await tenancy.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'app' })).toBe('org-a');
      expect([...(await tenancy.moduleInstances(['mi-a', 'mi-b', 'mi-none']))]).toEqual([
        ['mi-a', 'org-a'],
        ['mi-b', 'org-b'],
      ]);
    }
    // mi-a, env-b, the log source, then mi-b and mi-none through the per-id cache (mi-none cached as missing).
    expect(loads).toBe(5);
  });

  it('follows an environment moved to another organization once the write has been announced', async () => {
    expect(await tenancy.moduleInstance('mi-a')).toBe('org-a');
    await sql`update environments set project_id = 'prj-b' where id = 'env-a'`.execute(store.db);
    await caches.settle();
    expect(await tenancy.moduleInstance('mi-a')).toBe('org-b');
    expect(await tenancy.environment('env-a')).toBe('org-b');
    // Now wired through another organization's account: the log source no longer exists (issue 9 rule).
    expect(await tenancy.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'app' })).toBeUndefined();
  });

  it('finds an object created after it was looked up as missing', async () => {
    expect(await tenancy.project('prj-new')).toBeUndefined();
    await sql`insert into projects (id, organization_id, name) values ('prj-new', 'org-a', 'N')`.execute(store.db);
    await caches.settle();
    expect(await tenancy.project('prj-new')).toBe('org-a');
  });
});
