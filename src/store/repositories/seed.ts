import { sql } from 'kysely';
import type { Executor } from '../db.js';

/** The tables `berth seed` writes row by row. */
export type SeedTable =
  | 'organizations'
  | 'principals'
  | 'memberships'
  | 'api_keys'
  | 'cloud_accounts'
  | 'projects'
  | 'environments'
  | 'module_instances'
  | 'log_sources'
  | 'deployment_resources'
  | 'certificates'
  | 'domains';

/** Inserts rows, or updates every other column of the row with the same key (upsert by id). */
export async function upsertRows(
  db: Executor,
  table: SeedTable,
  key: string[],
  rows: Record<string, unknown>[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const updates = columns.filter((c) => !key.includes(c));
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    const values = sql.join(chunk.map((r) => sql`(${sql.join(columns.map((c) => sql`${r[c]}`))})`));
    const onConflict =
      updates.length === 0
        ? sql`do nothing`
        : sql`do update set ${sql.join(updates.map((c) => sql`${sql.ref(c)} = excluded.${sql.ref(c)}`))}`;
    await sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))})
      values ${values} on conflict (${sql.join(key.map((c) => sql.ref(c)))}) ${onConflict}`.execute(db);
  }
}

/** Which of these ids a table holds. */
export async function existingIds(
  db: Executor,
  table: Exclude<SeedTable, 'memberships' | 'log_sources'>,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{
    id: string;
  }>`select id from ${sql.table(table)} where id in (${sql.join([...ids])})`.execute(db);
  return new Set(rows.rows.map((r) => r.id));
}

/** Which of these principals name an email that a principal of another id already has (compared without case). */
export async function emailsTakenByOthers(
  db: Executor,
  wanted: readonly { id: string; email: string }[],
): Promise<Set<string>> {
  if (wanted.length === 0) return new Set();
  const rows = await db
    .selectFrom('principals')
    .select(['id', sql<string>`lower(email)`.as('email')])
    .where(
      sql`lower(email)`,
      'in',
      wanted.map((w) => w.email.toLowerCase()),
    )
    .execute();
  const holder = new Map(rows.map((r) => [r.email, r.id]));
  return new Set(
    wanted
      .filter((w) => {
        const other = holder.get(w.email.toLowerCase());
        return other !== undefined && other !== w.id && !wanted.some((x) => x.id === other);
      })
      .map((w) => w.id),
  );
}

/** The stored password hashes of these principals (those that have one). */
export async function storedPasswordHashes(db: Executor, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('principals')
    .select(['id', 'password_hash'])
    .where('id', 'in', [...ids])
    .where('password_hash', 'is not', null)
    .execute();
  return new Map(rows.map((r) => [r.id, r.password_hash!]));
}
