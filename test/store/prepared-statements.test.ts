import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fairPool } from '../../src/store/fair-pool.js';
import { PREPARED_PER_CONNECTION, postgresRunner, type StatementRunner } from '../../src/store/statement-runner.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../support/database.js';

/**
 * The statement runner (heavy reads on PostgreSQL) runs named prepared statements, so that a slice statement run
 * again and again is planned once (a generic plan after five executions), and keeps a bounded number of them per
 * connection. One connection here, so every statement and every look at pg_prepared_statements share a session.
 */
describe.skipIf(!onPostgres)('prepared statements of the statement runner (PostgreSQL)', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let run: StatementRunner;
  const signal = new AbortController().signal;
  const prepared = () =>
    run<{ statement: string; generic_plans: string }>(
      CompiledQuery.raw('select statement, generic_plans::text from pg_prepared_statements'),
      signal,
    );

  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
    run = postgresRunner(fairPool(pool, 1));
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('prepares a statement once per connection and plans it generically after five executions', async () => {
    const text = 'select $1::int + 1 as n';
    for (let i = 0; i < 8; i++) {
      expect(await run<{ n: number }>(CompiledQuery.raw(text, [i]), signal)).toEqual([{ n: i + 1 }]);
    }
    const mine = (await prepared()).filter((p) => p.statement === text);
    expect(mine).toHaveLength(1);
    expect(Number(mine[0]!.generic_plans)).toBeGreaterThanOrEqual(1);
  });

  it('keeps at most PREPARED_PER_CONNECTION statements, deallocating the least recently used', async () => {
    const texts = Array.from({ length: PREPARED_PER_CONNECTION + 10 }, (_, i) => `select $1::int + ${i} as n`);
    for (const [i, text] of texts.entries()) {
      expect(await run<{ n: number }>(CompiledQuery.raw(text, [1]), signal)).toEqual([{ n: 1 + i }]);
    }
    const held = await prepared();
    expect(held.length).toBeLessThanOrEqual(PREPARED_PER_CONNECTION);
    const statements = new Set(held.map((p) => p.statement));
    expect(statements.has(texts[0]!)).toBe(false);
    expect(statements.has(texts[texts.length - 1]!)).toBe(true);
    // An evicted statement runs again (prepared anew), with the right answer.
    expect(await run<{ n: number }>(CompiledQuery.raw(texts[0]!, [5]), signal)).toEqual([{ n: 5 }]);
  });

  it('still cancels a prepared statement when its signal aborts, and the connection serves the next one', async () => {
    const controller = new AbortController();
    const started = performance.now();
    const sleeping = run(CompiledQuery.raw('select pg_sleep($1::float8)', [5]), controller.signal);
    setTimeout(() => controller.abort(new Error('client went away')), 200);
    await expect(sleeping).rejects.toThrow('client went away');
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await run<{ n: number }>(CompiledQuery.raw('select $1::int + 1 as n', [41]), signal)).toEqual([{ n: 42 }]);
  });

  it('a cancel that arrives late never stops the next statement on the same connection', async () => {
    // The cancel travels on a socket of its own: a statement that finished just before it got there has already
    // given its connection back, and the next statement there (any query of the app) would be the one stopped.
    // Aborts timed around the end of a short statement, each followed at once by another statement on the pool.
    const cancelled: number[] = [];
    for (let i = 0; i < 40; i++) {
      const controller = new AbortController();
      const short = run(CompiledQuery.raw('select pg_sleep($1::float8)', [0.02]), controller.signal);
      setTimeout(() => controller.abort(new Error('client went away')), 10 + (i % 20));
      await short.catch(() => undefined);
      try {
        await pool.query('select pg_sleep(0.05)');
      } catch (error) {
        if ((error as { code?: string }).code === '57014') cancelled.push(i);
        else throw error;
      }
    }
    expect(cancelled).toEqual([]);
  });

  it('a statement that fails to prepare costs nothing later: its name is deallocated without error', async () => {
    await expect(run(CompiledQuery.raw('select from nowhere_at_all where', []), signal)).rejects.toThrow();
    // Push it out of the connection's statements: its DEALLOCATE fails on the server and is ignored.
    for (let i = 0; i < PREPARED_PER_CONNECTION + 1; i++) {
      await run(CompiledQuery.raw(`select $1::int * ${i + 100} as n`, [1]), signal);
    }
    expect(await run<{ n: number }>(CompiledQuery.raw('select $1::int + 2 as n', [1]), signal)).toEqual([{ n: 3 }]);
  });
});
