import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import {
  PostgresAdapter,
  PostgresDriver,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Kysely,
  type QueryResult,
} from 'kysely';
import { DatabaseUnavailableError } from '../core/database-unavailable.js';
import { yieldWhenTurnSpent } from './turn-slice.js';

/**
 * PGlite runs PostgreSQL in this process as WebAssembly, so when it dies (a PANIC, such as an I/O
 * error writing the WAL; a WebAssembly trap; an abort) nothing restarts it: every later call
 * fails or, after a PANIC, never returns (the next statement spins on the event loop's thread).
 * The supervisor keeps the one live instance: the first fatal error marks it dead, so it is never
 * called again; until a new instance is open on the same data directory every call fails at once
 * with {@link DatabaseUnavailableError} (answered 503). Committed work survives: PostgreSQL replays
 * the WAL when the directory is opened again, as after a crash. The process keeps Berth's
 * data-directory lock throughout (it never lets go of the directory).
 *
 * An in-memory database is not reopened: its data died with it; it stays unavailable and the
 * readiness probe says so.
 */
export class PGliteSupervisor {
  #lite: PGlite | undefined;
  #reopening: Promise<void> | undefined;
  #closed = false;
  /** Instances that failed fatally: never called again. */
  readonly #dead = new WeakSet<PGlite>();
  #deaths = 0;
  readonly #watchers = new Set<(lite: PGlite | undefined) => void>();

  private constructor(
    readonly dataDir: string | undefined,
    private readonly options: PGliteOptions,
    private readonly log: SupervisorLog,
    private readonly retryDelayMs: number,
  ) {}

  static async open(
    dataDir: string | undefined,
    options: PGliteOptions,
    settings: SupervisorSettings = {},
  ): Promise<PGliteSupervisor> {
    const supervisor = new PGliteSupervisor(
      dataDir,
      options,
      settings.log ?? (() => undefined),
      settings.retryDelayMs ?? 250,
    );
    supervisor.#lite = await PGlite.create(dataDir, options);
    return supervisor;
  }

  /** Whether a live instance answers now. */
  get available(): boolean {
    return this.#lite !== undefined && !this.#closed;
  }

  /** How many instances died since the store was opened. */
  get deaths(): number {
    return this.#deaths;
  }

  /** The live instance, or DatabaseUnavailableError while there is none. */
  instance(): PGlite {
    if (this.#closed) throw new DatabaseUnavailableError('the embedded database is closed');
    if (this.#lite === undefined) {
      throw new DatabaseUnavailableError(
        this.dataDir === undefined ? 'the in-memory database died' : 'the embedded database is being reopened',
      );
    }
    return this.#lite;
  }

  /**
   * Calls `watcher` with the new live instance each time one is opened again, and with undefined when the
   * live one dies (what a session-bound `LISTEN` needs: it is lost with the instance). Returns the unwatch.
   */
  watch(watcher: (lite: PGlite | undefined) => void): () => void {
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  #tell(lite: PGlite | undefined): void {
    for (const watcher of this.#watchers) {
      try {
        watcher(lite);
      } catch {
        // A failing watcher must not stop the supervisor (nor the others).
      }
    }
  }

  /** Runs `fn` on `lite`, which must still be live; a fatal error marks it dead and becomes DatabaseUnavailableError. */
  async use<T>(lite: PGlite, fn: (lite: PGlite) => Promise<T>): Promise<T> {
    if (this.#dead.has(lite) || this.#closed)
      throw new DatabaseUnavailableError('the embedded database died during this request');
    try {
      return await fn(lite);
    } catch (error) {
      if (!isFatal(error)) throw error;
      this.#markDead(lite, error);
      throw new DatabaseUnavailableError('the embedded database died', { cause: error });
    }
  }

  #markDead(lite: PGlite, cause: unknown): void {
    if (this.#dead.has(lite)) return;
    this.#dead.add(lite);
    if (this.#lite !== lite) return;
    this.#lite = undefined;
    this.#deaths++;
    this.log('the embedded database died', cause);
    this.#tell(undefined);
    // Emscripten's file streams hold host file descriptors; closing them runs no WebAssembly.
    try {
      lite.Module.FS.quit();
    } catch {
      // Already gone.
    }
    if (this.dataDir !== undefined && !this.#closed) this.#reopening = this.#reopen();
  }

  async #reopen(): Promise<void> {
    const started = Date.now();
    for (let attempt = 1; !this.#closed; attempt++) {
      try {
        const lite = await PGlite.create(this.dataDir, this.options);
        if (this.#closed) {
          await lite.close().catch(() => undefined);
          return;
        }
        this.#lite = lite;
        this.log(`the embedded database is open again after ${Date.now() - started} ms (attempt ${attempt})`);
        this.#tell(lite);
        return;
      } catch (error) {
        this.log(`reopening the embedded database failed (attempt ${attempt})`, error);
        // Backing off: a directory that cannot be opened now will not be in a millisecond either.
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(this.retryDelayMs * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS)),
        );
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reopening;
    const lite = this.#lite;
    this.#lite = undefined;
    if (lite !== undefined && !this.#dead.has(lite)) await lite.close();
  }

  /**
   * Fault injection (tests only): the next write to the WAL fails with EIO, as on a failing disk.
   * PostgreSQL PANICs on it, which is how the embedded database really dies.
   */
  injectWalWriteFailure(): void {
    const lite = this.instance();
    const fs = lite.Module.FS as unknown as EmscriptenFs;
    const write = fs.write;
    fs.write = function (stream, ...rest) {
      if (String(stream.path).includes('/pg_wal/')) {
        fs.write = write;
        throw new fs.ErrnoError(EIO);
      }
      return write.call(this, stream, ...rest);
    };
  }

  /** A Kysely dialect whose every statement runs on the supervised instance. */
  dialect(): Dialect {
    return {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new SupervisedDriver(this),
      createQueryCompiler: () => new PostgresQueryCompiler(),
      // biome-ignore lint/suspicious/noExplicitAny: Kysely's dialect interface is untyped in the schema
      createIntrospector: (db: Kysely<any>) => new PostgresIntrospector(db),
    };
  }
}

export type SupervisorLog = (message: string, error?: unknown) => void;

export interface SupervisorSettings {
  log?: SupervisorLog;
  /** Wait after the first failed attempt to reopen; it doubles with each failure, up to 5 s. */
  retryDelayMs?: number;
}

const MAX_RETRY_DELAY_MS = 5_000;

/** Emscripten's errno for EIO. */
const EIO = 29;

interface EmscriptenFs {
  write(this: unknown, stream: { path?: string }, ...rest: unknown[]): number;
  ErrnoError: new (errno: number) => Error;
}

/** An error after which the instance cannot be used: PostgreSQL exited or WebAssembly trapped. */
function isFatal(error: unknown): boolean {
  if (error instanceof WebAssembly.RuntimeError) return true;
  const e = error as { name?: unknown; severity?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (e.name === 'ExitStatus') return true;
  if (e.severity === 'PANIC' || e.severity === 'FATAL') return true;
  return e.message === 'PGlite is closed' || e.message === 'PGlite is closing';
}

/**
 * One session, as PGlite has: connections are handed out one at a time (a transaction's statements
 * must not interleave with others). A connection binds to the instance live at its first statement
 * and keeps it: if that instance dies, the rest of its transaction fails instead of running on a
 * new instance outside the transaction (a `commit` there would "succeed" having committed nothing).
 */
class SupervisedDriver extends PostgresDriver {
  readonly #queue: Array<(connection: SupervisedConnection) => void> = [];
  #current: SupervisedConnection | undefined;

  constructor(private readonly supervisor: PGliteSupervisor) {
    super({ pool: undefined as never });
  }

  override async init(): Promise<void> {}

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#current !== undefined) return new Promise((resolve) => this.#queue.push(resolve));
    this.#current = new SupervisedConnection(this.supervisor);
    return this.#current;
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (connection !== this.#current) throw new Error('releasing a connection that is not the current one');
    const next = this.#queue.shift();
    if (next === undefined) {
      this.#current = undefined;
      return;
    }
    this.#current = new SupervisedConnection(this.supervisor);
    next(this.#current);
  }

  override async destroy(): Promise<void> {
    await this.supervisor.close();
  }
}

class SupervisedConnection implements DatabaseConnection {
  #lite: PGlite | undefined;

  constructor(private readonly supervisor: PGliteSupervisor) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    await yieldWhenTurnSpent();
    this.#lite ??= this.supervisor.instance();
    const result = await this.supervisor.use(this.#lite, (lite) =>
      lite.query<R>(compiledQuery.sql, [...compiledQuery.parameters]),
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
