import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/db.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../support/database.js';

let db: TestDatabase;
const stores: Store[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const s of stores) await s.close();
  await db.drop();
});

describe('migrations', () => {
  it('apply every file once, and a second run applies nothing', async () => {
    const store = await openStore(db.target);
    stores.push(store);
    expect(await migrate(store)).toEqual(loadMigrations().map((m) => m.name));
    expect(await migrate(store)).toEqual([]);
  });

  it.runIf(onPostgres)('are safe when several replicas start at once', async () => {
    const fresh = await (await import('../support/database.js')).createTestDatabase();
    const replicas = await Promise.all([1, 2, 3].map(() => openStore(fresh.target)));
    try {
      const applied = await Promise.all(replicas.map((r) => migrate(r)));
      expect(applied.flat().sort()).toEqual(
        loadMigrations()
          .map((m) => m.name)
          .sort(),
      );
      const rows = await sql<{ n: number }>`select count(*)::int as n from berth_migrations`.execute(replicas[0]!.db);
      expect(rows.rows[0]!.n).toBe(loadMigrations().length);
    } finally {
      for (const r of replicas) await r.close();
      await fresh.drop();
    }
  });

  it('roll back a failing migration whole', async () => {
    const store = stores[0]!;
    await expect(
      migrate(store, [
        ...loadMigrations(),
        { name: '999_broken.sql', text: 'create table half_done (id int);\nselect * from no_such_table;' },
      ]),
    ).rejects.toThrow(/999_broken\.sql/);
    const t = await sql<{
      n: number;
    }>`select count(*)::int as n from information_schema.tables where table_name = 'half_done'`.execute(store.db);
    expect(t.rows[0]!.n).toBe(0);
    expect(await migrate(store)).toEqual([]);
  });
});
