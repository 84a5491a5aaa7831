import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Store } from './db.js';

// Resolved from the package root so the compiled dist/ reads the same files as src/.
const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));
/** Arbitrary constant: every Berth replica takes the same advisory lock. */
const MIGRATION_LOCK_KEY = 0x62657274;

export interface Migration {
  name: string;
  text: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((name) => ({ name, text: readFileSync(`${dir}${name}`, 'utf8') }));
}

/**
 * Applies the numbered SQL files not yet applied, in order, each in its own
 * transaction, under an advisory lock so replicas starting together apply
 * each file exactly once. Returns the names applied.
 */
export async function migrate(store: Store, migrations = loadMigrations()): Promise<string[]> {
  const applied: string[] = [];
  await store.db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
    try {
      await sql`create table if not exists berth_migrations (
        name text primary key, applied_at timestamptz not null default now())`.execute(conn);
      const done = await sql<{ name: string }>`select name from berth_migrations`.execute(conn);
      const doneNames = new Set(done.rows.map((r) => r.name));
      for (const m of migrations) {
        if (doneNames.has(m.name)) continue;
        const name = m.name.replace(/'/g, "''");
        try {
          await store.execScript(`${m.text}\nINSERT INTO berth_migrations (name) VALUES ('${name}');`);
        } catch (error) {
          throw new Error(`migration ${m.name} failed: ${(error as Error).message}`, { cause: error });
        }
        applied.push(m.name);
      }
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
    }
  });
  return applied;
}
