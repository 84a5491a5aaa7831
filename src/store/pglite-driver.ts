import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Kysely,
  PostgresAdapter,
  PostgresDriver,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { PGliteSupervisor, SessionLease } from './pglite-supervisor.js';

/** A Kysely dialect whose every statement runs on the instance `supervisor` keeps (in its worker thread). */
export function pgliteDialect(supervisor: PGliteSupervisor): Dialect {
  return {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new SupervisedDriver(supervisor),
    createQueryCompiler: () => new PostgresQueryCompiler(),
    // biome-ignore lint/suspicious/noExplicitAny: Kysely's dialect interface is untyped in the schema
    createIntrospector: (db: Kysely<any>) => new PostgresIntrospector(db),
  };
}

/**
 * One session, as PGlite has, shared by connections: the worker runs their statements round-robin across
 * tenants, and a transaction's statements alone from its `begin` to its `commit` or `rollback` (they must
 * not interleave with others). A connection binds to the instance live at its first statement and keeps
 * it: if that instance dies, the rest of its transaction fails instead of running on a new instance
 * outside the transaction (a `commit` there would "succeed" having committed nothing).
 */
class SupervisedDriver extends PostgresDriver {
  constructor(private readonly supervisor: PGliteSupervisor) {
    super({ pool: undefined as never });
  }

  override async init(): Promise<void> {}

  override async acquireConnection(): Promise<DatabaseConnection> {
    return new SupervisedConnection(this.supervisor, await this.supervisor.acquireSession());
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    (connection as SupervisedConnection).marks('begin');
    await super.beginTransaction(connection, settings);
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as SupervisedConnection).marks('end');
    await super.commitTransaction(connection);
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as SupervisedConnection).marks('end');
    await super.rollbackTransaction(connection);
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as SupervisedConnection).lease.release();
  }

  override async destroy(): Promise<void> {
    await this.supervisor.close();
  }
}

class SupervisedConnection implements DatabaseConnection {
  #generation: number | undefined;
  /** What the next statement does to the transaction. */
  #txn: 'begin' | 'end' | undefined;

  constructor(
    private readonly supervisor: PGliteSupervisor,
    readonly lease: SessionLease,
  ) {}

  marks(txn: 'begin' | 'end'): void {
    this.#txn = txn;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    this.#generation ??= this.supervisor.generation();
    const txn = this.#txn;
    this.#txn = undefined;
    const result = await this.supervisor.query<R>(
      this.#generation,
      this.lease,
      compiledQuery.sql,
      compiledQuery.parameters,
      txn,
    );
    return result.affectedRows
      ? { numAffectedRows: BigInt(result.affectedRows), rows: result.rows }
      : { rows: result.rows };
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery, chunkSize = 100): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = await this.executeQuery<R>(compiledQuery);
    for (let i = 0; i < rows.length; i += chunkSize) yield { rows: rows.slice(i, i + chunkSize) };
  }
}
