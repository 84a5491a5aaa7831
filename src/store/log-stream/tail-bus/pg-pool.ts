import pg from 'pg';
import type { Logger } from '../../../core/logger.js';

export interface TailPoolOptions {
  url: string;
  max: number;
  /** Shown in pg_stat_activity (operators and tests find the tail connections of a replica by it). */
  applicationName: string;
  /** Server-side `statement_timeout`; the client gives up on a statement a second later. */
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  log?: Logger;
}

/**
 * A small pool of the tail cluster's own, apart from the store's: lease renewals must not queue behind tenants'
 * statements for a connection, and every statement here is bounded far below the store's limits.
 */
export function tailPool(options: TailPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + 1_000,
    keepAlive: true,
    application_name: options.applicationName,
    options: '-c jit=off',
  });
  // A connection lost while idle (or in use: pg emits on the client as well as failing its statement) must not
  // crash the process; the pool drops it and opens another on demand.
  pool.on('error', (error) => options.log?.warn({ err: error }, 'tail cluster: a database connection failed'));
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Logs the first failure of an episode and the recovery, not every failed attempt in between. */
export class FailureLog {
  #failing = false;

  constructor(
    private readonly what: string,
    private readonly log?: Logger,
  ) {}

  failed(error: unknown): void {
    if (!this.#failing) this.log?.warn({ err: error }, `${this.what} failed; trying again`);
    this.#failing = true;
  }

  succeeded(): void {
    if (this.#failing) this.log?.info({}, `${this.what} works again`);
    this.#failing = false;
  }
}
