import type { CompiledQuery } from 'kysely';
import pg from 'pg';
import type { ConnectionSource } from './fair-pool.js';

/**
 * Runs one statement that a caller may stop. The promise settles only once the statement has
 * stopped, so whoever holds a concurrency slot for it keeps the slot until the work is really over.
 */
export type StatementRunner = <R>(query: CompiledQuery<R>, signal: AbortSignal) => Promise<R[]>;

/**
 * PostgreSQL: the statement runs on a connection of its own; an abort sends the protocol's
 * CancelRequest for that backend (node-postgres opens a separate socket for it, so a full pool
 * cannot hold the cancel back), and the statement ends with an error once the server has stopped it.
 */
export function postgresRunner(pool: ConnectionSource): StatementRunner {
  return async <R>(query: CompiledQuery<R>, signal: AbortSignal): Promise<R[]> => {
    signal.throwIfAborted();
    const client = await pool.connect();
    let broken = false;
    try {
      if (signal.aborted) throw signal.reason;
      const pending = client.query(query.sql, query.parameters as unknown[]);
      const active = (client as unknown as { activeQuery?: unknown }).activeQuery;
      const cancel = () => {
        new (pg.Client as unknown as new (options: unknown) => { cancel(c: unknown, q: unknown): void })(
          pool.options,
        ).cancel(client, active);
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
      client.release(broken);
    }
  };
}
