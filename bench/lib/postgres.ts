import pg from 'pg';

/**
 * The PostgreSQL server benchmarks create their databases on: `BENCH_DATABASE_URL`, else
 * `TEST_DATABASE_URL`, else the local server's `test` database as `postgres`.
 * `BENCH_DATABASE_URL=off` runs PGlite rows only.
 */
export const ADMIN_URL =
  process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

let reachable: Promise<boolean> | undefined;

/** Whether the server answers; asked once per process. */
export function postgresReachable(): Promise<boolean> {
  reachable ??= (async () => {
    if (ADMIN_URL === 'off') return false;
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2_000 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return reachable;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface FreshDatabase {
  url: string;
  drop(): Promise<void>;
}

/** `berth_bench_<name>`, dropped and created empty. */
export async function freshDatabase(name: string): Promise<FreshDatabase> {
  const db = `berth_bench_${name.replace(/[^a-z0-9_]/g, '_')}`;
  const drop = () => admin((c) => c.query(`drop database if exists ${db} with (force)`)).then(() => undefined);
  await drop();
  await admin((c) => c.query(`create database ${db}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${db}`;
  return { url: url.toString(), drop };
}
