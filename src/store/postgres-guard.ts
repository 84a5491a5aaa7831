import type { DatabaseConnection, Dialect, Driver, Kysely, TransactionSettings } from 'kysely';
import { asUnavailable } from '../core/database-unavailable.js';

/**
 * A Kysely dialect whose errors say when the database is unreachable: a failure to connect, or a
 * connection lost mid-statement, leaves it as DatabaseUnavailableError (answered 503), while every
 * other error (a constraint, a bad statement) passes unchanged.
 */
export function guardedDialect(dialect: Dialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new GuardedDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    // biome-ignore lint/suspicious/noExplicitAny: Kysely's dialect interface is untyped in the schema
    createIntrospector: (db: Kysely<any>) => dialect.createIntrospector(db),
  };
}

const rethrow = (error: unknown): never => {
  throw asUnavailable(error);
};

/** The connection as the driver made it, with `executeQuery` and `streamQuery` translating errors; the rest reaches the original. */
function guard(connection: DatabaseConnection): DatabaseConnection {
  return new Proxy(connection, {
    get(target, property) {
      if (property === 'executeQuery')
        return (query: Parameters<DatabaseConnection['executeQuery']>[0]) => target.executeQuery(query).catch(rethrow);
      if (property === 'streamQuery') {
        return async function* (query: Parameters<DatabaseConnection['streamQuery']>[0], chunkSize?: number) {
          try {
            yield* target.streamQuery(query, chunkSize);
          } catch (error) {
            rethrow(error);
          }
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

class GuardedDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return guard(await this.inner.acquireConnection().catch(rethrow));
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  savepoint: Driver['savepoint'] = (...args) => this.inner.savepoint!(...args);
  rollbackToSavepoint: Driver['rollbackToSavepoint'] = (...args) => this.inner.rollbackToSavepoint!(...args);
  releaseSavepoint: Driver['releaseSavepoint'] = (...args) => this.inner.releaseSavepoint!(...args);

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
