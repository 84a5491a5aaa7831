import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture } from '../../src/fixtures/load.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { domainWorld } from '../support/domain-world.js';
import { ORG_A, ORG_B } from '../support/world.js';
import { heldOutside, holdersOfName } from '../../src/store/domains/domains.js';

let database: TestDatabase;
let store: Store;

/** The query plan as one string. */
async function plan(query: ReturnType<typeof sql>): Promise<string> {
  const rows = await sql<Record<string, string>>`explain ${query}`.execute(store.db);
  return rows.rows.map((r) => Object.values(r)[0]).join('\n');
}

beforeAll(async () => {
  database = await createTestDatabase();
  store = await openStore(database.target);
  await migrate(store);
  await loadFixture(store.db, domainWorld());
  // 200 instances × 100 domains, names spread over 2,000 parents.
  await sql`insert into module_instances (id, environment_id, name)
    select 'mi-' || i, 'env-a', 'bulk ' || i from generate_series(1, 200) i`.execute(store.db);
  await sql`insert into domains (id, module_instance_id, domain_name, managed_by_service)
    select 'd-' || i, 'mi-' || (i % 200 + 1), 'n' || i || '.p' || (i % 2000) || '.bulk.example', false
    from generate_series(1, 20000) i`.execute(store.db);
  await sql`analyze domains`.execute(store.db);
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

describe('domain indexes (migration 002)', () => {
  it('derives parent_name from the name, wildcards included', async () => {
    const rows = await store.db
      .selectFrom('domains')
      .select(['domain_name', 'parent_name'])
      .where('id', 'in', ['d-apps', 'd-api', 'd-apex'])
      .orderBy('domain_name')
      .execute();
    expect(rows).toEqual([
      { domain_name: '*.apps.acme.example', parent_name: 'apps.acme.example' },
      { domain_name: 'acme.example', parent_name: 'example' },
      { domain_name: 'api.apps.acme.example', parent_name: 'apps.acme.example' },
    ]);
  });

  it('answers "names one label under x" from the parent_name index, not a scan', async () => {
    const p = await plan(
      sql`select module_instance_id from domains d where d.parent_name = ${'p7.bulk.example'} and d.domain_name <> ${'*.p7.bulk.example'} limit 1`,
    );
    expect(p).toMatch(/domains_parent_name_idx/);
    expect(p).not.toMatch(/Seq Scan/);
  });

  it('answers an exact name from the name index', async () => {
    const p = await plan(sql`select module_instance_id from domains d where d.domain_name = ${'n7.p7.bulk.example'}`);
    expect(p).toMatch(/domains_name_idx/);
    expect(p).not.toMatch(/Seq Scan/);
  });

  it('pages an instance in bytewise (domain_name, id) order straight from its index, without sorting', async () => {
    const p = await plan(sql`select id from domains d where d.module_instance_id = ${'mi-3'}
      and (d.domain_name collate "C", d.id collate "C") > (${'n1000.p1000.bulk.example'}, ${'d-1000'})
      order by d.domain_name collate "C", d.id collate "C" limit 8`);
    expect(p).toMatch(/domains_instance_name_idx/);
    expect(p).not.toMatch(/Sort|Seq Scan/);
  });
});

describe('the lookups of name availability (each statement built once, run with every call its own values)', () => {
  it('answers each call for its own name, parent and organizations, with and without organizations to leave out', async () => {
    // n7 is held by mi-8, n8 by mi-9: both in env-a, of ORG_A. Under p7 are n7, n2007, n4007, …
    expect(await holdersOfName(store.db, 'n7.p7.bulk.example', 50)).toEqual([
      { module_instance_id: 'mi-8', organization_id: ORG_A },
    ]);
    expect(await holdersOfName(store.db, 'n8.p8.bulk.example', 50)).toEqual([
      { module_instance_id: 'mi-9', organization_id: ORG_A },
    ]);
    expect(await holdersOfName(store.db, 'nobody.bulk.example', 50)).toEqual([]);
    for (const [where, name] of [
      [{ name: 'n7.p7.bulk.example' }, 'name'],
      [{ parentName: 'p7.bulk.example', except: 'n7.p7.bulk.example' }, 'parent'],
    ] as const) {
      expect(await heldOutside(store.db, where, []), name).toBe(true);
      expect(await heldOutside(store.db, where, [ORG_B]), name).toBe(true);
      expect(await heldOutside(store.db, where, [ORG_A]), name).toBe(false);
      expect(await heldOutside(store.db, where, [ORG_B, ORG_A]), name).toBe(false);
    }
    expect(await heldOutside(store.db, { name: 'nobody.bulk.example' }, [])).toBe(false);
    expect(await heldOutside(store.db, { parentName: 'p9999.bulk.example', except: 'x' }, [ORG_B])).toBe(false);
  });
});
