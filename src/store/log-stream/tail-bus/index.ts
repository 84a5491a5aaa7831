import type { Logger } from '../../../core/logger.js';
import { CONNECT_TIMEOUT_MS, type Store } from '../../db.js';
import { MemoryBus, MemoryLeases } from './memory.js';
import { PgBus } from './pg-bus.js';
import { PgLeases } from './pg-leases.js';
import { tailPool } from './pg-pool.js';
import { RedisBus } from './redis-bus.js';
import type { TailBus, TailLeases } from './types.js';

export { BUS_START, type BusEntry, type Lease, type TailBus, type TailLeases } from './types.js';

export interface TailClusterOptions {
  store: Store;
  /** Entries go through Redis streams when set; leases stay in PostgreSQL. */
  redisUrl?: string;
  /** Prefix of the bus's Redis keys (default `berth:tail:`): deployments or test runs sharing a Redis keep apart. */
  redisPrefix?: string;
  /** Names this replica in lease rows and in pg_stat_activity. */
  replicaId: string;
  /** Default 3000; renewed every ttl/3. */
  leaseTtlMs?: number;
  /** Entries are kept this long (default 60 s)… */
  bufferMs?: number;
  /** …and at most this many per key (default 10,000; on PostgreSQL enforced once a second). */
  bufferRows?: number;
  log?: Logger;
}

/** Bus connections per process on PostgreSQL (publishes, reads, trims), besides its LISTEN connection. */
const BUS_POOL_SIZE = 4;
/** Bus statements: a publish of ~1 MB, a read of up to 4 MB. */
const BUS_STATEMENT_TIMEOUT_MS = 10_000;
/** Lease statements: acquire and release may share the pool with the one renewal in flight. */
const LEASE_POOL_SIZE = 2;

/**
 * The cluster plumbing of live tails: one bus (entries of a key reach every replica with subscribers of it) and the
 * leases that elect which replica runs a key's upstream. PGlite (one process): both in memory. PostgreSQL: a buffer
 * table with NOTIFY, or Redis streams with `redisUrl`; leases in PostgreSQL either way. Close both.
 */
export function openTailCluster(options: TailClusterOptions): { bus: TailBus; leases: TailLeases } {
  const ttlMs = options.leaseTtlMs ?? 3_000;
  const bufferMs = options.bufferMs ?? 60_000;
  const bufferRows = options.bufferRows ?? 10_000;
  const { log, replicaId } = options;
  if (options.store.target.kind === 'pglite') {
    return { bus: new MemoryBus({ bufferMs, bufferRows, log }), leases: new MemoryLeases() };
  }
  const url = options.store.target.url;
  const leasePool = tailPool({
    url,
    max: LEASE_POOL_SIZE,
    applicationName: `berth-tail-leases ${replicaId}`,
    statementTimeoutMs: ttlMs,
    // A renewal waiting longer for a connection would find its lease about to run out anyway.
    connectTimeoutMs: Math.max(ttlMs / 3, 250),
    log,
  });
  const leases = new PgLeases(leasePool, { replicaId, ttlMs, log });
  const bus =
    options.redisUrl !== undefined && options.redisUrl !== ''
      ? new RedisBus({ url: options.redisUrl, prefix: options.redisPrefix ?? 'berth:tail:', bufferMs, bufferRows, log })
      : new PgBus(
          tailPool({
            url,
            max: BUS_POOL_SIZE,
            applicationName: `berth-tail ${replicaId}`,
            statementTimeoutMs: BUS_STATEMENT_TIMEOUT_MS,
            connectTimeoutMs: CONNECT_TIMEOUT_MS,
            log,
          }),
          { url, replicaId, bufferMs, bufferRows, log },
        );
  return { bus, leases };
}
