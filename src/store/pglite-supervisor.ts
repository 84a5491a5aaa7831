import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';
import { backoffDelay } from '../core/backoff.js';
import { DatabaseUnavailableError } from '../core/database-unavailable.js';
import { FairQueue, type Release } from '../core/fair-queue.js';
import { Listeners } from '../core/listeners.js';
import { fairnessKey } from '../core/tenant-context.js';
import {
  type QueryReply,
  reviveError,
  type WorkerEvent,
  type WorkerRequest,
  type WorkerSettings,
} from './pglite-worker-protocol.js';
import type { RunOptions, StatementRunner } from './statement-runner.js';

/**
 * PGlite runs PostgreSQL as WebAssembly on the thread that calls it, a statement start to end in one call:
 * on the main thread a long statement stopped every request. It runs in a worker thread
 * (`pglite-worker.ts`), one worker per instance. The worker reports its instance's death (the first fatal
 * error: a PANIC, a WebAssembly trap; or a failed WAL write, after which PGlite may never return); the
 * supervisor then ends that worker and starts a new one on the same data directory, which replays the WAL
 * as after a crash, so committed work survives. A crash of the worker thread itself (out of memory) is a
 * death too. Until a new instance is open every call fails at once with {@link DatabaseUnavailableError}
 * (answered 503); attempts that fail back off. Each instance has a generation number: a connection bound
 * to one never carries on in the next. The process keeps Berth's data-directory lock throughout.
 *
 * An in-memory database is not reopened: its data died with it; it stays unavailable and the readiness
 * probe says so.
 */
/**
 * Connections whose statements may be sent to the worker at once: enough that the worker always has the
 * next one while this thread is busy (one statement per turn of a loaded event loop was ~300 a second);
 * the order among them is the worker's round-robin.
 */
const PIPELINE = 64;

/** A connection to the embedded database's one session. */
export interface SessionLease {
  session: number;
  /** Whose turn its statements take (`fairnessKey()` when it was acquired). */
  group: string;
  release: Release;
}

export class PGliteSupervisor {
  /**
   * PGlite has one session, which the worker shares (`pglite-worker.ts`): statements are sent ahead, at most
   * {@link PIPELINE} connections at once, so the worker never idles waiting for this thread's next turn;
   * the worker runs them round-robin across tenants and keeps a transaction's statements together.
   */
  readonly #slots = new FairQueue({ max: PIPELINE });
  #nextSession = 1;
  #worker: Worker | undefined;
  /**
   * On disk: a worker started ahead, its modules loaded, that opens the next instance when this one dies (a
   * new thread takes about a second to get there, on top of reopening the directory).
   */
  #standby: Worker | undefined;
  /** The live instance's generation; undefined while there is none. */
  #live: number | undefined;
  #nextGeneration = 1;
  #deaths = 0;
  #diedAt = 0;
  /** Attempts to open again since the last death (the backoff). */
  #attempts = 0;
  #restart: NodeJS.Timeout | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Settles `open()`: set until the first instance is open. */
  #first: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (value?: QueryReply) => void; reject: (error: unknown) => void }>();
  readonly #listeners = new Map<number, { generation: number; onPayload: (payload: string) => void }>();
  readonly #watchers = new Listeners<[generation: number | undefined]>();

  private constructor(
    readonly dataDir: string | undefined,
    private readonly log: SupervisorLog,
    private readonly retryDelayMs: number,
    private readonly template: string | undefined,
  ) {}

  /** Starts the worker; resolves once the database is open, rejects if it cannot be opened. */
  static async open(dataDir: string | undefined, settings: SupervisorSettings = {}): Promise<PGliteSupervisor> {
    const supervisor = new PGliteSupervisor(
      dataDir,
      settings.log ?? (() => undefined),
      settings.retryDelayMs ?? 250,
      dataDir === undefined ? settings.template : undefined,
    );
    await new Promise<void>((resolve, reject) => {
      supervisor.#first = { resolve, reject };
      supervisor.#open();
    });
    return supervisor;
  }

  /** Whether a live instance answers now. */
  get available(): boolean {
    return this.#live !== undefined && !this.#closed;
  }

  /** How many instances died (a worker crash included) since the store was opened. */
  get deaths(): number {
    return this.#deaths;
  }

  /** The live instance's generation, or DatabaseUnavailableError while there is none. */
  generation(): number {
    if (this.#closed) throw new DatabaseUnavailableError('the embedded database is closed');
    if (this.#live === undefined) {
      throw new DatabaseUnavailableError(
        this.dataDir === undefined ? 'the in-memory database died' : 'the embedded database is being reopened',
      );
    }
    return this.#live;
  }

  /**
   * Calls `watcher` with the new live generation each time an instance is opened again, and with undefined
   * when the live one dies (what a session-bound `LISTEN` needs: it is lost with the instance). Returns the
   * unwatch.
   */
  watch(watcher: (generation: number | undefined) => void): () => void {
    return this.#watchers.add(watcher);
  }

  /**
   * A connection to the shared session, in `fairnessKey()`'s turn; `signal` leaves the queue. Call its
   * release once, when done.
   */
  async acquireSession(signal?: AbortSignal): Promise<SessionLease> {
    const group = fairnessKey();
    const release = await this.#slots.acquire({ group }, { signal });
    return { session: this.#nextSession++, group, release };
  }

  /**
   * Runs a statement of `lease`'s connection on the instance of `generation` (which must still be live).
   * `txn` marks the statement that begins a transaction (the worker then runs this connection's statements
   * only) and the one that ends it.
   */
  async query<R>(
    generation: number,
    lease: Omit<SessionLease, 'release'>,
    sql: string,
    params: readonly unknown[],
    txn?: 'begin' | 'end',
    options?: RunOptions,
  ): Promise<{ rows: R[]; affectedRows?: number }> {
    this.#bound(generation);
    const reply = await this.#call({
      op: 'query',
      sql,
      params,
      session: lease.session,
      group: lease.group,
      txn,
      ...(options?.arrays === true ? { arrays: true } : {}),
    });
    return reply as { rows: R[]; affectedRows?: number };
  }

  /** Runs a multi-statement script (no parameters) on the instance of `generation`. */
  async exec(generation: number, sql: string): Promise<void> {
    this.#bound(generation);
    await this.#call({ op: 'exec', sql });
  }

  /**
   * `LISTEN channel` on the instance of `generation`: `onPayload` is called with each notification (before
   * the statement that committed it returns). The LISTEN dies with its instance. Returns the unlisten.
   */
  async listen(
    generation: number,
    channel: string,
    onPayload: (payload: string) => void,
  ): Promise<() => Promise<void>> {
    this.#bound(generation);
    const listenId = this.#nextId++;
    this.#listeners.set(listenId, { generation, onPayload });
    try {
      await this.#call({ op: 'listen', channel, listenId });
    } catch (error) {
      this.#listeners.delete(listenId);
      throw error;
    }
    return async () => {
      if (!this.#listeners.delete(listenId) || this.#live !== generation || this.#closed) return;
      await this.#call({ op: 'unlisten', listenId });
    };
  }

  /**
   * Store.run on PGlite: one statement in its turn for the session; `signal` takes it out of the queue while
   * it waits. A running statement cannot be stopped: PGlite has no cancel (PostgreSQL runs in the worker's
   * thread, which is busy until the statement ends, and there is no second backend to send a cancel from),
   * and ending the worker would kill the instance (an in-memory database with its data) and fail whatever
   * else was in its session. Statements are kept short instead (bounded size, no user regex, a row limit).
   */
  readonly run: StatementRunner = async <R>(
    query: CompiledQuery<R>,
    signal: AbortSignal,
    options?: RunOptions,
  ): Promise<R[]> => {
    signal.throwIfAborted();
    const lease = await this.acquireSession(signal);
    try {
      signal.throwIfAborted();
      return (await this.query<R>(this.generation(), lease, query.sql, query.parameters, undefined, options)).rows;
    } finally {
      lease.release();
    }
  };

  /**
   * Fault injection (tests only): the next write to the WAL fails with EIO, as on a failing disk.
   * PostgreSQL PANICs on it, which is how the embedded database really dies.
   */
  async injectWalWriteFailure(): Promise<void> {
    this.generation();
    await this.#call({ op: 'injectWalWriteFailure' });
  }

  /** Fault injection (tests only): the worker thread crashes, as it would out of memory. */
  injectWorkerCrash(): void {
    this.#worker?.postMessage({ id: 0, op: 'crash' } satisfies WorkerRequest);
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restart);
    await this.#standby?.terminate();
    this.#standby = undefined;
    const worker = this.#worker;
    if (worker === undefined) return;
    try {
      // Queued behind the statements sent before it; closing the instance checkpoints it.
      await this.#call({ op: 'close' });
    } catch (error) {
      // An instance that died meanwhile has nothing left to close.
      if (!(error instanceof DatabaseUnavailableError)) throw error;
    } finally {
      this.#worker = undefined;
      this.#live = undefined;
      await worker.terminate();
      this.#failPending(new DatabaseUnavailableError('the embedded database is closed'));
    }
  }

  #bound(generation: number): void {
    if (this.#closed) throw new DatabaseUnavailableError('the embedded database is closed');
    if (generation !== this.#live) throw new DatabaseUnavailableError('the embedded database died during this request');
  }

  #call(request: DistributiveOmit<WorkerRequest, 'id'>): Promise<QueryReply | undefined> {
    const worker = this.#worker;
    if (worker === undefined)
      return Promise.reject(new DatabaseUnavailableError('the embedded database is not running'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      // Throws (before anything is sent) for a parameter that cannot be cloned.
      worker.postMessage({ ...request, id });
      this.#pending.set(id, { resolve, reject });
      this.#holdProcess();
    });
  }

  /** The worker keeps the process alive only while someone waits for it: a store left open does not. */
  #holdProcess(): void {
    if (this.#pending.size > 0 || this.#first !== undefined) this.#worker?.ref();
    else this.#worker?.unref();
  }

  /** Opens the next instance, in the standby worker if there is one. */
  #open(): void {
    const worker = this.#standby ?? this.#startWorker();
    this.#standby = undefined;
    this.#worker = worker;
    worker.postMessage({ id: 0, op: 'open', generation: this.#nextGeneration++ } satisfies WorkerRequest);
    this.#holdProcess();
  }

  #prepareStandby(): void {
    if (this.dataDir === undefined || this.#closed || this.#standby !== undefined) return;
    this.#standby = this.#startWorker();
    this.#standby.unref();
  }

  #startWorker(): Worker {
    const worker = startWorker({ dataDir: this.dataDir, template: this.template });
    let failure: unknown;
    worker.on('message', (event: WorkerEvent) => {
      if (worker !== this.#worker) return;
      if (event.type === 'failed') {
        failure = reviveError(event.error);
        void worker.terminate();
      } else this.#onEvent(event);
    });
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (worker === this.#standby) this.#standby = undefined;
      if (worker === this.#worker) this.#exited(failure ?? new Error(`the PGlite worker exited with code ${code}`));
    });
    return worker;
  }

  #onEvent(event: Exclude<WorkerEvent, { type: 'failed' }>): void {
    switch (event.type) {
      case 'reply': {
        const pending = this.#pending.get(event.id);
        if (pending === undefined) return;
        this.#pending.delete(event.id);
        this.#holdProcess();
        if (event.ok) pending.resolve(event.value);
        else if (event.unavailable === undefined) pending.reject(reviveError(event.error));
        else pending.reject(new DatabaseUnavailableError(event.unavailable, { cause: reviveError(event.error) }));
        return;
      }
      case 'notification': {
        try {
          this.#listeners.get(event.listenId)?.onPayload(event.payload);
        } catch {
          // A failing listener must not stop the others.
        }
        return;
      }
      case 'opened':
        this.#opened(event.generation);
        return;
      case 'died':
        this.#died(reviveError(event.error));
        return;
    }
  }

  #opened(generation: number): void {
    this.#live = generation;
    this.#prepareStandby();
    if (this.#first !== undefined) {
      this.#first.resolve();
      this.#first = undefined;
      this.#holdProcess();
      return;
    }
    this.log(`the embedded database is open again after ${Date.now() - this.#diedAt} ms (attempt ${this.#attempts})`);
    this.#attempts = 0;
    this.#tell(generation);
  }

  /** The live instance died (its worker said so, or the worker thread ended): its worker is ended. */
  #died(cause: unknown): void {
    const generation = this.#live;
    if (generation === undefined) return;
    this.#live = undefined;
    this.#deaths++;
    this.#diedAt = Date.now();
    for (const [id, listener] of this.#listeners) if (listener.generation === generation) this.#listeners.delete(id);
    this.log('the embedded database died', cause);
    this.#retire(new DatabaseUnavailableError('the embedded database died', { cause }));
    this.#tell(undefined);
  }

  /** The worker thread ended without being asked to: whatever it ran is gone. */
  #exited(cause: unknown): void {
    if (this.#first !== undefined) {
      this.#retire(cause);
      this.#first.reject(cause);
      this.#first = undefined;
    } else if (this.#live !== undefined) {
      this.#died(cause);
    } else {
      this.log(`reopening the embedded database failed (attempt ${this.#attempts})`, cause);
      this.#retire(new DatabaseUnavailableError('the embedded database worker stopped', { cause }));
    }
  }

  /**
   * Ends the current worker (it may be stuck in a dead instance: ending the thread stops it), fails what it
   * was asked, and starts the next one: at once after a death, then backing off while attempts fail.
   */
  #retire(error: unknown): void {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failPending(error);
    // Node closes the files a worker opened when it ends: the dead instance's data files are not left open.
    void worker?.terminate();
    if (this.#closed || this.#first !== undefined || this.dataDir === undefined) return;
    const delay = backoffDelay(this.#attempts, {
      baseMs: this.retryDelayMs,
      maxMs: MAX_RETRY_DELAY_MS,
      jitter: 'none',
    });
    this.#attempts++;
    this.#restart = setTimeout(() => this.#open(), delay).unref();
  }

  #failPending(error: unknown): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #tell(generation: number | undefined): void {
    // A failing watcher must not stop the supervisor (nor the others): Listeners drops what it throws.
    this.#watchers.emit(generation);
  }
}

const MAX_RETRY_DELAY_MS = 5_000;

export type SupervisorLog = (message: string, error?: unknown) => void;

export interface SupervisorSettings {
  log?: SupervisorLog;
  /** Wait after the first failed attempt to open again; it doubles with each failure, up to 5 s. */
  retryDelayMs?: number;
  /** In memory only: the data-directory dump a new instance starts from (`StoreTarget`'s `template`). */
  template?: string;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * The worker runs `pglite-worker.js` beside this file: in dist/, tsc's output. From the TypeScript source
 * (vitest, tsx) Node cannot load the `.ts` file itself, and Node 20 does not apply a `--import` loader given
 * in a worker's execArgv, so the worker starts from a line that imports the source through tsx's API.
 */
function startWorker(settings: WorkerSettings): Worker {
  const options = { workerData: settings };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./pglite-worker.js', import.meta.url), options);
  const source = new URL('./pglite-worker.ts', import.meta.url).href;
  const bootstrap = `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => tsx.tsImport(${JSON.stringify(source)}, ${JSON.stringify(source)}))`;
  return new Worker(bootstrap, { ...options, eval: true });
}

/** tsx's ESM API (its CommonJS one resolves a wrong path inside a worker). */
function tsxEsmApi(): string {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as {
    exports: Record<string, { import?: { default?: string } }>;
  };
  const entry = exports['./esm/api']?.import?.default;
  if (entry === undefined) throw new Error('tsx has no ESM API entry');
  return pathToFileURL(join(dirname(manifest), entry)).href;
}
