import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { PGliteSupervisor } from './pglite-supervisor.js';
import { guardedDialect } from './postgres-guard.js';
import type { Tables } from './schema.js';
import { pgliteRunner, postgresRunner, type StatementRunner } from './statement-runner.js';
import { asUnavailable, DatabaseUnavailableError } from '../core/database-unavailable.js';

export type Db = Kysely<Tables>;
export type Executor = Kysely<Tables> | Transaction<Tables>;

/** Where the data lives: a PostgreSQL server, PGlite on disk, or PGlite in memory. */
export type StoreTarget =
  | { kind: 'postgres'; url: string; statementTimeoutMs?: number }
  | { kind: 'pglite'; dataDir?: string };

export interface Store {
  db: Db;
  target: StoreTarget;
  /** Runs one statement a caller may stop (log queries): see `StatementRunner`. */
  run: StatementRunner;
  /** Runs a multi-statement SQL script (migrations) in one transaction: all of it or none. */
  execScript(text: string): Promise<void>;
  /** Resolves when the database answers `select 1`; PostgreSQL: rejects with DatabaseUnavailableError past `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  /** PGlite: the embedded database's supervisor (it reopens a dead instance on disk). */
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
    const pool = new pg.Pool({
      connectionString: target.url,
      max: 10,
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
    const db = new Kysely<Tables>({ dialect: guardedDialect(new PostgresDialect({ pool })) });
    const runner = postgresRunner(pool);
    return {
      db,
      target,
      run: (query, signal) => runner(query, signal).catch((error: unknown) => Promise.reject(asUnavailable(error))),
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
      ping: (timeoutMs) => ping(db, timeoutMs),
      close: () => db.destroy(),
    };
  }
  if (target.dataDir !== undefined) mkdirSync(target.dataDir, { recursive: true });
  const supervisor = await PGliteSupervisor.open(
    target.dataDir,
    { parsers: { [INT8_OID]: (v: string) => Number(v) } },
    { log: options.onDatabaseEvent },
  );
  const db = new Kysely<Tables>({ dialect: supervisor.dialect() });
  return {
    db,
    target,
    run: pgliteRunner(db),
    execScript: async (text) => {
      await supervisor.use(supervisor.instance(), (lite) => lite.exec(text));
    },
    ping: async () => {
      // A dead or reopening instance fails at once. A live one cannot be unreachable: it runs on
      // this thread, so a time limit would only turn a busy moment (a long statement ahead in the
      // one session) into "not ready".
      supervisor.instance();
      await sql`select 1`.execute(db);
    },
    supervisor,
    close: () => db.destroy(),
  };
}

/** `select 1`, failing with DatabaseUnavailableError past `timeoutMs` (the statement itself is bounded by the pool's timeouts). */
export async function ping(db: Db, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DatabaseUnavailableError(`the database did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  const query = sql`select 1`.execute(db);
  query.catch(() => undefined);
  try {
    await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
