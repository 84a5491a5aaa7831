// The PostgreSQL pool behind a fair queue (src/store/fair-pool.ts), over real connections: when every connection is
// busy, the next free one goes to the tenant whose turn it is, not to whoever asked first.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runAsTenant } from '../../src/core/tenant-context.js';
import { sql } from 'kysely';
import { openStore } from '../../src/store/db.js';
import { fairPool } from '../../src/store/fair-pool.js';

const URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SIZE = 2;
const pool = new pg.Pool({ connectionString: URL, max: SIZE });
afterAll(() => pool.end());

async function statement(source: ReturnType<typeof fairPool>, organizationId: string, text: string, done: string[]) {
  await runAsTenant({ organizationId }, async () => {
    const client = await source.connect();
    try {
      await client.query(text);
      done.push(organizationId);
    } finally {
      client.release();
    }
  });
}

describe('fairPool', () => {
  it("gives a waiting tenant the next free connection ahead of another tenant's backlog", async () => {
    const source = fairPool(pool, SIZE);
    const done: string[] = [];
    const work = [
      // Tenant A takes both connections, then queues eight more statements.
      ...Array.from({ length: 10 }, () => statement(source, 'a', 'select pg_sleep(0.05)', done)),
    ];
    await new Promise((resolve) => setTimeout(resolve, 10));
    work.push(statement(source, 'b', 'select 1', done));
    await Promise.all(work);
    // B ran in the first round of freed connections: among the first four to finish, not after A's backlog.
    expect(done.indexOf('b')).toBeLessThan(4);
    expect(done.filter((t) => t === 'a')).toHaveLength(10);
  });

  it('lets one tenant hold at most half of the connections: another finds one free at once', async () => {
    const source = fairPool(pool, SIZE);
    const done: string[] = [];
    const started = performance.now();
    const work = Array.from({ length: 6 }, () => statement(source, 'a', 'select pg_sleep(0.1)', done));
    await new Promise((resolve) => setTimeout(resolve, 20));
    work.push(statement(source, 'b', 'select 1', done));
    await Promise.all(work);
    // A's statements ran one at a time (half of 2); B did not wait for any of them to end.
    expect(done[0]).toBe('b');
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
  });

  it('gives the slot back when connecting fails and when a client is released with an error', async () => {
    const broken = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    const source = fairPool(broken, 1);
    await expect(source.connect()).rejects.toThrow();
    await expect(source.connect()).rejects.toThrow();
    await broken.end();
    const good = fairPool(pool, 1);
    const client = await good.connect();
    client.release(true);
    const again = await good.connect();
    again.release();
  });

  it('opens as many connections as DB_POOL_SIZE says (poolSize), and no more', async () => {
    const store = await openStore({ kind: 'postgres', url: URL, poolSize: 3 });
    try {
      // Six tenants at once, each holding its connection for a moment: three connections serve them all.
      const pids = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          runAsTenant({ organizationId: `t${i}` }, async () => {
            const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.15)`.execute(
              store.db,
            );
            return rows[0]!.pid;
          }),
        ),
      );
      expect(new Set(pids).size).toBe(3);
    } finally {
      await store.close();
    }
  });
});
