import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import type { Tables } from './schema.js';
import { pgliteRunner, postgresRunner, type StatementRunner } from './statement-runner.js';

export type Db = Kysely<Tables>;
export type Executor = Kysely<Tables> | Transaction<Tables>;

/** Where the data lives: a PostgreSQL server, PGlite on disk, or PGlite in memory. */
export type StoreTarget = { kind: 'postgres'; url: string; statementTimeoutMs?: number } | { kind: 'pglite'; dataDir?: string };

export interface Store {
  db: Db;
  target: StoreTarget;
  /** Runs one statement a caller may stop (log queries): see `StatementRunner`. */
  run: StatementRunner;
  /** Runs a multi-statement SQL script (migrations) in one transaction: all of it or none. */
  execScript(text: string): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /**
   * Called with the error of a PostgreSQL connection that failed while idle in
   * the pool (server restart, `pg_terminate_backend`, network loss). The pool
   * drops that connection and opens another on demand, so this is for logging;
   * an exception thrown here is ignored. Without it such errors are dropped.
   */
  onError?: (error: Error) => void;
}

const INT8_OID = 20;

/** Opens the database; bigint columns come back as numbers (epoch ms fits in 2^53). */
export async function openStore(target: StoreTarget, options: StoreOptions = {}): Promise<Store> {
  if (target.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: target.url,
      max: 10,
      // Server-side backstop for every statement; the log query also cancels its own when told to stop.
      ...(target.statementTimeoutMs === undefined ? {} : { statement_timeout: target.statementTimeoutMs }),
      // JIT compiling a large user filter took seconds during which the backend ignored cancel requests.
      options: '-c jit=off',
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client losing its server must not crash the process: pg emits
    // 'error' on the pool, which throws when nothing listens.
    pool.on('error', (error: Error) => {
      try {
        options.onError?.(error);
      } catch {
        // A failing logger must not turn a dropped connection into a crash.
      }
    });
    const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      target,
      run: postgresRunner(pool),
      execScript: async (text) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          // A migration may rewrite a large table: the statement timeout is not for it.
          await client.query('SET LOCAL statement_timeout = 0');
          await client.query(text);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => db.destroy(),
    };
  }
  if (target.dataDir !== undefined) mkdirSync(target.dataDir, { recursive: true });
  const lite = await PGlite.create(target.dataDir, {
    parsers: { [INT8_OID]: (v: string) => Number(v) },
  });
  const db = new Kysely<Tables>({ dialect: new PGliteDialect(lite) });
  return {
    db,
    target,
    run: pgliteRunner(db),
    execScript: async (text) => {
      await lite.exec(text);
    },
    close: () => db.destroy(),
  };
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
