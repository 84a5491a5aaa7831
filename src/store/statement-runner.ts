import { createHash } from 'node:crypto';
import type { CompiledQuery } from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import type { ConnectionSource } from './fair-pool.js';

/**
 * Runs one statement that a caller may stop. The promise settles only once the statement has
 * stopped, so whoever holds a concurrency slot for it keeps the slot until the work is really over.
 */
export type StatementRunner = <R>(query: CompiledQuery<R>, signal: AbortSignal, options?: RunOptions) => Promise<R[]>;

/** How a statement's rows come back. */
export interface RunOptions {
  /**
   * Each row as an array of its column values, in the statement's order, instead of an object keyed by column
   * name: the drivers build one array a row and no keyed properties. A 10,000-row page came back 5–8 ms sooner
   * (node-postgres, in process), and a PGlite worker posts arrays to the main thread with no property names.
   */
  arrays?: boolean;
}

/**
 * PostgreSQL: the statement runs on a connection of its own; an abort sends the protocol's
 * CancelRequest for that backend (node-postgres opens a separate socket for it, so a full pool
 * cannot hold the cancel back), and the statement ends with an error once the server has stopped it.
 *
 * That socket may deliver the cancel after the statement has ended by itself; on a connection back in the pool it
 * would stop whatever ran there next. So a connection a cancel was sent for goes back only once the server has
 * closed the cancel's socket (it signals the backend before closing: a backend waiting for its next command then
 * ignores the cancel), and is closed instead if that takes longer than `CANCEL_SETTLE_MS`.
 */
export function postgresRunner(pool: ConnectionSource): StatementRunner {
  const prepared = new PreparedStatements();
  return async <R>(query: CompiledQuery<R>, signal: AbortSignal, options?: RunOptions): Promise<R[]> => {
    signal.throwIfAborted();
    const client = await pool.connect();
    let broken = false;
    let cancelled: Promise<boolean> | undefined;
    try {
      if (signal.aborted) throw signal.reason;
      let name: string;
      try {
        name = await prepared.nameOn(client, query.sql);
      } catch (error) {
        broken = true;
        throw error;
      }
      if (signal.aborted) throw signal.reason;
      const pending = client.query({
        name,
        text: query.sql,
        values: query.parameters as unknown[],
        ...(options?.arrays === true ? { rowMode: 'array' } : {}),
      });
      const active = (client as unknown as { activeQuery?: unknown }).activeQuery;
      const cancel = () => {
        cancelled = sendCancel(pool, client, active);
      };
      signal.addEventListener('abort', cancel, { once: true });
      try {
        const result = await pending;
        return result.rows as R[];
      } catch (error) {
        // A cancelled statement answers 57014; anything else at the connection level may leave it unusable.
        broken = (error as { code?: string }).code === undefined;
        throw signal.aborted ? signal.reason : error;
      } finally {
        signal.removeEventListener('abort', cancel);
      }
    } finally {
      if (cancelled !== undefined && !(await cancelled)) broken = true;
      client.release(broken);
    }
  };
}

/** How long a connection a cancel was sent for waits for the cancel to be delivered before it is closed instead. */
export const CANCEL_SETTLE_MS = 2_000;

interface CancelConnection {
  cancel(client: unknown, query: unknown): void;
  connection: { once(event: 'end', listener: () => void): void; on(event: 'error', listener: () => void): void };
}

/**
 * Sends the CancelRequest for `active` if it is still the connection's running statement. Resolves true once the
 * server has closed the cancel's socket (or no cancel was needed), false if that did not happen in time.
 */
function sendCancel(pool: ConnectionSource, client: pg.PoolClient, active: unknown): Promise<boolean> {
  if ((client as unknown as { activeQuery?: unknown }).activeQuery !== active) return Promise.resolve(true);
  const canceller = new (pg.Client as unknown as new (options: unknown) => CancelConnection)(pool.options);
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), CANCEL_SETTLE_MS);
    const settled = () => {
      clearTimeout(timer);
      resolve(true);
    };
    canceller.connection.once('end', settled);
    // A cancel that could not be sent leaves nothing on its way, but its fate is unknown: close the connection.
    // `on`, not `once`: a second error on that socket must not go unheard (an unheard 'error' ends the process).
    canceller.connection.on('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    canceller.cancel(client, active);
  });
}

/** Prepared statements each connection keeps at most; the least recently used is deallocated past this. */
export const PREPARED_PER_CONNECTION = 16;

/**
 * The statements of heavy reads run as named prepared statements. A slice statement is run again and again with
 * other parameters (the next keyset page of the same lanes), and PostgreSQL plans an unnamed statement at every
 * execution: for a page of 50 lanes, planning took 14–48 ms against 3–7 ms of execution. Prepared, PostgreSQL
 * switches to a generic plan after five executions and plans no more. The name is a hash of the text, so one text
 * has one name on every connection. A tenant chooses the shapes (lanes, filters), so each connection keeps at most
 * `PREPARED_PER_CONNECTION` of them and deallocates the least recently used.
 */
class PreparedStatements {
  readonly #byClient = new WeakMap<pg.PoolClient, { names: LRUCache<string, true>; evicted: string[] }>();

  /** The statement's name on this connection, once every name evicted to make room is deallocated. */
  async nameOn(client: pg.PoolClient, text: string): Promise<string> {
    const name = `berth_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    let kept = this.#byClient.get(client);
    if (kept === undefined) {
      const evicted: string[] = [];
      kept = {
        evicted,
        names: new LRUCache<string, true>({ max: PREPARED_PER_CONNECTION, dispose: (_v, old) => evicted.push(old) }),
      };
      this.#byClient.set(client, kept);
    }
    kept.names.set(name, true);
    for (let old = kept.evicted.shift(); old !== undefined; old = kept.evicted.shift()) {
      // One that never got prepared (its PREPARE failed) answers an error from the server: nothing to undo.
      await client.query(`DEALLOCATE ${old}`).catch((error: { code?: string }) => {
        if (error.code === undefined) throw error;
      });
      // node-postgres remembers what it prepared on the connection: forget it, or it would skip the next PREPARE.
      delete (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection
        .parsedStatements[old];
    }
    return name;
  }
}
