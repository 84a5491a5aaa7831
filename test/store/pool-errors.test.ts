import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openConfiguredStore } from '../../src/runtime.js';
import { openStore, type Store } from '../../src/store/db.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../support/database.js';
import { startServerProcess } from '../support/process.js';

/**
 * An idle pooled connection whose backend goes away (server restart, failover,
 * `pg_terminate_backend`) makes pg emit 'error' on the pool: the process must
 * live on, the error must reach the log, and the pool must serve the next query.
 */

let database: TestDatabase;
let admin: pg.Client;

beforeAll(async () => {
  if (!onPostgres) return;
  database = await createTestDatabase();
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
});
afterAll(async () => {
  if (!onPostgres) return;
  await admin.end();
  await database.drop();
});

/** The backend pid of the connection that ran the query; the pool keeps that connection idle afterwards. */
async function idleBackendPid(store: Store): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db);
  return rows[0]!.pid;
}

/** Terminates backends from another connection, as an administrator or a failover would. */
async function terminate(condition: string, values: unknown[]): Promise<number> {
  // Two statements: in one, PostgreSQL may call pg_terminate_backend before the other conditions filter the rows.
  const { rows } = await admin.query<{ pid: number }>(
    `select pid from pg_stat_activity where ${condition} and pid <> pg_backend_pid()`,
    values,
  );
  const pids = rows.map((r) => r.pid);
  const done = await admin.query<{ ok: boolean }>(
    'select pg_terminate_backend(pid) as ok from unnest($1::int[]) as pid',
    [pids],
  );
  return done.rows.filter((r) => r.ok).length;
}

async function eventually(check: () => void, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

describe.runIf(onPostgres)('errors of idle PostgreSQL connections', { timeout: 60_000 }, () => {
  it('reach onError, do not crash the process, and the store answers the next query', async () => {
    const errors: Error[] = [];
    const store = await openStore(database.target, { onError: (error) => errors.push(error) });
    try {
      const pid = await idleBackendPid(store);
      expect(await terminate('pid = $1', [pid])).toBe(1);
      await eventually(() => expect(errors).toHaveLength(1));
      expect(errors[0]).toBeInstanceOf(Error);
      expect((errors[0] as Error & { code?: string }).code).toBe('57P01'); // admin_shutdown
      const after = await idleBackendPid(store);
      expect(after).not.toBe(pid);
    } finally {
      await store.close();
    }
  });

  it('are dropped without onError, and an onError that throws does not crash the process either', async () => {
    const quiet = await openStore(database.target);
    const throwing = await openStore(database.target, {
      onError: () => {
        throw new Error('the logger failed');
      },
    });
    try {
      const pids = [await idleBackendPid(quiet), await idleBackendPid(throwing)];
      expect(await terminate('pid = any($1)', [pids])).toBe(2);
      // The pool forgets the failed connection; then the next query opens a new one.
      await new Promise((r) => setTimeout(r, 200));
      expect(await idleBackendPid(quiet)).not.toBe(pids[0]);
      expect(await idleBackendPid(throwing)).not.toBe(pids[1]);
    } finally {
      await quiet.close();
      await throwing.close();
    }
  });

  it('reach the onPoolError of openConfiguredStore', async () => {
    const errors: Error[] = [];
    const opened = await openConfiguredStore(loadConfig({ DATABASE_URL: database.url! }), {
      onPoolError: (e) => errors.push(e),
    });
    try {
      const pid = await idleBackendPid(opened.store);
      await terminate('pid = $1', [pid]);
      await eventually(() => expect(errors).toHaveLength(1));
      await idleBackendPid(opened.store);
    } finally {
      await opened.close();
    }
  });

  it('are logged by berth serve at error level, and the server keeps serving', async () => {
    const server = await startServerProcess([], { DATABASE_URL: database.url! });
    try {
      // /readyz queries the database, leaving the connection idle in the pool.
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const name = new URL(database.url!).pathname.slice(1);
      expect(await terminate('datname = $1', [name])).toBeGreaterThan(0);
      await eventually(() => expect(server.output()).toContain('idle database connection failed'));
      const line = server
        .output()
        .split('\n')
        .find((l) => l.includes('idle database connection failed'))!;
      expect(JSON.parse(line)).toMatchObject({ level: 50, err: { code: '57P01' } });
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      expect(server.child.exitCode).toBeNull();
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });
});
