import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { RAW_SQL_TABLES, TABLE_COLUMNS } from '../../src/store/schema.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The Kysely table types (src/store/schema.ts) against the migrations: tsc holds TABLE_COLUMNS to the interfaces,
 * this test holds it to the columns a fresh database has once every migration ran.
 */

interface DbColumn {
  table_name: string;
  column_name: string;
  is_nullable: 'YES' | 'NO';
  udt_name: string;
  column_default: string | null;
  is_identity: 'YES' | 'NO';
  is_generated: 'ALWAYS' | 'NEVER';
}

let database: TestDatabase;
let store: Store;
let columns: DbColumn[];

beforeAll(async () => {
  database = await createTestDatabase();
  store = await openStore(database.target);
  await migrate(store);
  const result = await sql<DbColumn>`
    select table_name, column_name, is_nullable, udt_name, column_default, is_identity, is_generated
    from information_schema.columns where table_schema = current_schema()
    order by table_name, ordinal_position`.execute(store.db);
  columns = result.rows;
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

/** `<udt_name>[ | null][ default| generated]`, the form TABLE_COLUMNS is written in. */
function described(spec: string) {
  const match = /^(\w+)( \| null)?( default| generated)?$/.exec(spec);
  if (match === null) throw new Error(`not a column description: ${spec}`);
  return { type: match[1]!, nullable: match[2] !== undefined, insert: match[3]?.trim() };
}

describe('store/schema.ts and the migrations', () => {
  it('name the same tables: each in Tables or among the raw-SQL ones, not both', () => {
    const inDb = [...new Set(columns.map((c) => c.table_name))].sort();
    const typed = Object.keys(TABLE_COLUMNS);
    const raw = Object.keys(RAW_SQL_TABLES);
    expect(typed.filter((t) => raw.includes(t))).toEqual([]);
    expect(inDb).toEqual([...typed, ...raw].sort());
  });

  it.each(Object.keys(TABLE_COLUMNS))('%s: the same columns, types, nullability and generated values', (table) => {
    const spec: Record<string, string> = TABLE_COLUMNS[table as keyof typeof TABLE_COLUMNS];
    const inDb = columns.filter((c) => c.table_name === table);
    expect(Object.keys(spec).sort(), 'columns').toEqual(inDb.map((c) => c.column_name).sort());
    for (const column of inDb) {
      const { type, nullable, insert } = described(spec[column.column_name]!);
      const name = `${table}.${column.column_name}`;
      expect(column.udt_name, `${name}: type`).toBe(type);
      expect(column.is_generated === 'ALWAYS', `${name}: generated always (GeneratedAlways)`).toBe(
        insert === 'generated',
      );
      // A generated column is nullable by the catalog whatever its expression gives: its type says what it reads.
      if (insert !== 'generated') {
        expect(column.is_nullable === 'YES', `${name}: nullable`).toBe(nullable);
      }
      // A NOT NULL column the types let inserts leave out (Generated<>) needs a value from the database.
      if (insert === 'default') {
        expect(column.column_default !== null || column.is_identity === 'YES', `${name}: has a default`).toBe(true);
      }
    }
  });
});
