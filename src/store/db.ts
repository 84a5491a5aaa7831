import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { pgliteDialect } from './pglite-driver.js';
import { PGliteSupervisor } from './pglite-supervisor.js';
import { fairPool } from './fair-pool.js';
import { guardedDialect } from './postgres-guard.js';
import type { Tables } from './schema.js';
import { postgresRunner, type StatementRunner } from './statement-runner.js';
import { asUnavailable, DatabaseUnavailableError } from '../core/database-unavailable.js';

export type Db = Kysely<Tables>;
export type Executor = Kysely<Tables> | Transaction<Tables>;

/** Where the data lives: a PostgreSQL server, PGlite on disk, or PGlite in memory. */
export type StoreTarget =
  | {
      kind: 'postgres';
      url: string;
      statementTimeoutMs?: number;
      /** Connections of the pool (`DB_POOL_SIZE`); default {@link POOL_SIZE}. */
      poolSize?: number;
    }
  | {
      kind: 'pglite';
      dataDir?: string;
      /**
       * In memory only: a dump of a fresh data directory (PGlite's `dumpDataDir('none')`, a tar file) the instance
       * starts from instead of creating the cluster itself: about 0.6 s instead of 3–4 s. The test suites open a
       * few hundred empty databases from one such dump.
       */
      template?: string;
    };

export interface Store {
  db: Db;
  target: StoreTarget;
  /** Runs one statement a caller may stop (log queries): see `StatementRunner`. */
  run: StatementRunner;
  /** Runs a multi-statement SQL script (migrations) in one transaction: all of it or none. */
  execScript(text: string): Promise<void>;
  /** Resolves when the database answers `select 1`; PostgreSQL: rejects with DatabaseUnavailableError past `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  /** PGlite: the embedded database's supervisor (it runs the database in a worker thread, reopens a dead instance on disk). */
  supervisor?: PGliteSupervisor;
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
  /** PGlite: the embedded database died or was reopened (for the log). */
  onDatabaseEvent?: (message: string, error?: unknown) => void;
}

const INT8_OID = 20;
/** PostgreSQL connections per process, unless the target says otherwise (`DB_POOL_SIZE`). */
const POOL_SIZE = 10;

/**
 * PostgreSQL: how long to wait for a connection (a free one from the pool, or a new one to the
 * server). Past it the request fails (503) instead of waiting on an unreachable server.
 */
export const CONNECT_TIMEOUT_MS = 5_000;
/**
 * PostgreSQL: the client gives up on a statement this long after the server-side
 * `statement_timeout` would have stopped it: the server is then unreachable, not slow.
 */
export const QUERY_TIMEOUT_MARGIN_MS = 2_000;
/** No client-side limit (migrations): the largest delay a timer takes. */
const NO_QUERY_TIMEOUT = 2 ** 31 - 1;

/** Opens the database; bigint columns come back as numbers (epoch ms fits in 2^53). */
export async function openStore(target: StoreTarget, options: StoreOptions = {}): Promise<Store> {
  if (target.kind === 'postgres') {
    const poolSize = target.poolSize ?? POOL_SIZE;
    const pool = new pg.Pool({
      connectionString: target.url,
      max: poolSize,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // A server that stops answering (network partition) would otherwise hold the statement, and the request, forever.
      query_timeout: (target.statementTimeoutMs ?? 60_000) + QUERY_TIMEOUT_MARGIN_MS,
      keepAlive: true,
      // Server-side backstop for every statement; the log query also cancels its own when told to stop.
      ...(target.statementTimeoutMs === undefined ? {} : { statement_timeout: target.statementTimeoutMs }),
      // JIT compiling a large user filter took seconds during which the backend ignored cancel requests.
      options: '-c jit=off',
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID
            ? (v: string) => Number(v)
            : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    const report = (error: Error) => {
      try {
        options.onError?.(error);
      } catch {
        // A failing logger must not turn a dropped connection into a crash.
      }
    };
    // An idle client losing its server must not crash the process: pg emits
    // 'error' on the pool, which throws when nothing listens.
    pool.on('error', report);
    // Nor a client in use: the pool stops listening to a client it hands out, and a socket error
    // (connection reset mid-statement) is emitted on the client as well as failing its statement.
    // The statement's caller gets the error; the pool drops the client when it comes back.
    pool.on('connect', (client) => client.on('error', () => undefined));
    // Connections are handed out round-robin across tenants once all are in use.
    const fair = fairPool(pool, poolSize);
    // The readiness probe asks on a connection of its own: whether the server answers, not how long the tenants'
    // statements queue for the pool under load (a busy replica is not an unreachable database).
    const probe = new pg.Pool({
      connectionString: target.url,
      max: 1,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      options: '-c jit=off',
    });
    probe.on('error', report);
    probe.on('connect', (client) => client.on('error', () => undefined));
    const db = new Kysely<Tables>({
      dialect: guardedDialect(new PostgresDialect({ pool: fair as unknown as pg.Pool })),
    });
    const runner = postgresRunner(fair);
    return {
      db,
      target,
      run: (query, signal, runOptions) =>
        runner(query, signal, runOptions).catch((error: unknown) => Promise.reject(asUnavailable(error))),
      execScript: async (text) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          // A migration may rewrite a large table: the statement timeout is not for it.
          await client.query('SET LOCAL statement_timeout = 0');
          await client.query({ text, query_timeout: NO_QUERY_TIMEOUT } as pg.QueryConfig);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      },
      ping: (timeoutMs) => probeOnce(probe, timeoutMs),
      close: async () => {
        await probe.end().catch(() => undefined);
        await db.destroy();
      },
    };
  }
  if (target.dataDir !== undefined) mkdirSync(target.dataDir, { recursive: true });
  // The embedded database runs in a worker thread (bigint columns parsed to numbers there too).
  const supervisor = await PGliteSupervisor.open(target.dataDir, {
    log: options.onDatabaseEvent,
    ...(target.template === undefined ? {} : { template: target.template }),
  });
  const db = new Kysely<Tables>({ dialect: pgliteDialect(supervisor) });
  return {
    db,
    target,
    run: supervisor.run,
    // Not in a turn for the session: `migrate` holds it (its advisory lock) while it runs each script.
    execScript: async (text) => supervisor.exec(supervisor.generation(), text),
    ping: async () => {
      // A dead or reopening instance fails at once. A live one answers once the statements ahead of this one
      // in the session have run: a time limit would only turn a busy moment into "not ready".
      supervisor.generation();
      await sql`select 1`.execute(db);
    },
    supervisor,
    close: () => db.destroy(),
  };
}

/** `select 1`, failing with DatabaseUnavailableError past `timeoutMs` (the statement itself is bounded by the pool's timeouts). */
export async function ping(db: Db, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
  await withTimeout(sql`select 1`.execute(db), timeoutMs);
}

/**
 * `select 1` on the probe's connection. One that fails, or does not answer soon after the probe gave up, is dropped
 * rather than reused (a connection stuck on a blackholed server would keep the probe failing after it recovers).
 */
async function probeOnce(probe: pg.Pool, timeoutMs: number): Promise<void> {
  const attempt = (async () => {
    const client = await probe.connect();
    try {
      await client.query({ text: 'select 1', query_timeout: timeoutMs + 1_000 } as pg.QueryConfig);
      client.release();
    } catch (error) {
      client.release(true);
      throw error;
    }
  })();
  await withTimeout(attempt, timeoutMs);
}

/** Settles with `statement`, or fails with DatabaseUnavailableError after `timeoutMs`. */
async function withTimeout(statement: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DatabaseUnavailableError(`the database did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  statement.catch(() => undefined);
  try {
    await Promise.race([statement, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
