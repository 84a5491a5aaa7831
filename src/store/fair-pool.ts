import type pg from 'pg';
import { FairQueue } from '../core/fair-queue.js';
import { fairnessKey } from '../core/tenant-context.js';

/** What Kysely's PostgreSQL driver and the statement runner take from a pool. */
export interface ConnectionSource {
  connect(): Promise<pg.PoolClient>;
  end(): Promise<void>;
  readonly options: pg.Pool['options'];
}

/**
 * The PostgreSQL pool behind a fair queue: when every connection is in use, the next free one goes to the tenant
 * whose turn it is (round-robin by organization, else principal, else client address: core/tenant-context.ts),
 * not to whoever asked first — so one tenant's burst of statements cannot keep another's waiting behind all of it —
 * and no tenant holds more than half of the connections.
 * The pool's own wait for a connection (`connectionTimeoutMillis`) starts once the queue has let the caller through.
 */
export function fairPool(pool: pg.Pool, size: number): ConnectionSource {
  // One tenant holds at most half the pool: another's statement finds a connection free at once instead of waiting
  // for one of the heavy tenant's statements to end.
  const queue = new FairQueue({ max: size, perGroup: Math.max(1, Math.ceil(size / 2)) });
  return {
    options: pool.options,
    end: () => pool.end(),
    async connect() {
      const done = await queue.acquire({ group: fairnessKey() });
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        done();
        throw error;
      }
      const release = client.release;
      client.release = (error?: Error | boolean) => {
        client.release = release;
        done();
        return release.call(client, error);
      };
      return client;
    },
  };
}
