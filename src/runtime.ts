import { resolve } from 'node:path';
import type { Config } from './config.js';
import { acquireLock, type DataDirLock } from './store/data-dir-lock.js';
import { openStore, type Store, type StoreOptions, type StoreTarget } from './store/db.js';
import { migrate } from './store/migrate.js';

export interface OpenOptions {
  memory?: boolean;
  /** Skip the data-directory lock (only for read-only inspection). */
  lock?: boolean;
  /** Errors of idle PostgreSQL connections, for the log (see {@link StoreOptions.onError}). */
  onPoolError?: (error: Error) => void;
  /** The embedded database died or was reopened (see {@link StoreOptions.onDatabaseEvent}). */
  onDatabaseEvent?: (message: string, error?: unknown) => void;
}

export function storeTarget(config: Config, memory = false): StoreTarget {
  if (config.DATABASE_URL !== undefined)
    return {
      kind: 'postgres',
      url: config.DATABASE_URL,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      poolSize: config.DB_POOL_SIZE,
    };
  return memory ? { kind: 'pglite' } : { kind: 'pglite', dataDir: resolve(config.BERTH_DATA_DIR) };
}

export interface OpenedStore {
  store: Store;
  lock: DataDirLock | null;
  close(): Promise<void>;
}

/** Opens and migrates the configured database, taking the PGlite directory lock. */
export async function openConfiguredStore(config: Config, options: OpenOptions = {}): Promise<OpenedStore> {
  const target = storeTarget(config, options.memory);
  const lock =
    target.kind === 'pglite' && target.dataDir !== undefined && options.lock !== false
      ? acquireLock(target.dataDir)
      : null;
  try {
    const store = await openStore(target, { onError: options.onPoolError, onDatabaseEvent: options.onDatabaseEvent });
    await migrate(store);
    let closed = false;
    return {
      store,
      lock,
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await store.close();
        } finally {
          lock?.release();
        }
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}
