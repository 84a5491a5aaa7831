import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedLogSources, type LogSourceCatalog } from '../../../src/services/caches/cached-log-sources.js';
import { CacheInvalidation } from '../../../src/services/caches/invalidation.js';
import { openChangeFeed } from '../../../src/store/change-feed.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { migrate } from '../../../src/store/migrate.js';
import { listLogSourcesOfInstances } from '../../../src/store/repositories/log-sources.js';
import { loadTwoOrgs } from './two-orgs.js';
import { pgliteTarget } from '../../support/database.js';

let store: Store;
let caches: CacheInvalidation;
let catalog: LogSourceCatalog;
let statements = 0;

beforeAll(async () => {
  store = await openStore(pgliteTarget());
  await migrate(store);
  await loadTwoOrgs(store, ['app', 'db']);
  caches = new CacheInvalidation(openChangeFeed(store));
  const db = store.db.withPlugin({
    transformQuery: (args) => args.node,
    // Once per statement run (transformQuery also sees the subqueries).
    transformResult: async (args) => {
      statements += 1;
      return args.result;
    },
  });
  catalog = cachedLogSources(db, caches, { maxEntries: 100, missingTtlMs: 1_000 });
  while (!caches.active) await new Promise((resolve) => setTimeout(resolve, 10));
}, 60_000);

afterAll(async () => {
  await caches.close();
  await store.close();
});

describe('log sources answered from memory', () => {
  it("gives the database's answer, in its order, and asks once per instance", async () => {
    const direct = await listLogSourcesOfInstances(store.db, ['mi-b', 'mi-a', 'mi-none'], 'ui.logs');
    statements = 0;
    for (let i = 0; i < 5; i++) {
      expect(await catalog(['mi-b', 'mi-a', 'mi-none', 'mi-a'], 'ui.logs')).toEqual(direct);
      expect(await catalog(['mi-a'], 'other.kind')).toEqual([]);
    }
    expect(direct.map((s) => `${s.moduleInstanceId}/${s.id}`)).toEqual(['mi-a/app', 'mi-a/db', 'mi-b/app', 'mi-b/db']);
    // mi-a, mi-b, mi-none (an empty answer is kept too) for ui.logs, and mi-a for the other kind.
    expect(statements).toBe(4);
  });

  it('follows a new source, a moved account and a deleted source once the writes have been announced', async () => {
    await catalog(['mi-a'], 'ui.logs');
    await sql`insert into log_sources (module_instance_id, id, kind, cloud_account_id, region, log_group)
      values ('mi-a', 'cache', 'ui.logs', 'acct-a', 'eu-west-1', '/cache')`.execute(store.db);
    await caches.settle();
    expect((await catalog(['mi-a'], 'ui.logs')).map((s) => s.id)).toEqual(['app', 'cache', 'db']);
    // The account goes to another organization: its sources no longer exist for mi-a (tenancy rule).
    await sql`update cloud_accounts set organization_id = 'org-b' where id = 'acct-a'`.execute(store.db);
    await caches.settle();
    expect(await catalog(['mi-a'], 'ui.logs')).toEqual([]);
    await sql`update cloud_accounts set organization_id = 'org-a' where id = 'acct-a'`.execute(store.db);
    await sql`delete from log_sources where id = 'cache'`.execute(store.db);
    await caches.settle();
    expect((await catalog(['mi-a'], 'ui.logs')).map((s) => s.id)).toEqual(['app', 'db']);
  });
});
