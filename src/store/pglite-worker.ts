/**
 * The worker thread that owns the embedded database (started by `PGliteSupervisor`, one worker per instance,
 * which it opens when told to: a worker may be started ahead, to stand by).
 * PGlite runs PostgreSQL as WebAssembly on the thread that calls it, and a statement runs start to end in one
 * call: here it blocks this thread, never the main event loop.
 *
 * It tells the main thread when its instance dies: at the first fatal error (a PANIC, a WebAssembly trap, an
 * abort), after which the instance is never called again, or as soon as a write to the WAL fails. The latter
 * matters because a PANIC while committing a transaction block (the WAL write failing with EIO) does not
 * throw: PGlite spins in it forever. The main thread then ends this thread (which stops the spin) and starts
 * a new worker on the same data directory.
 */
import { readFile } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { RoundRobin } from '../core/round-robin.js';
import {
  type QueryReply,
  serializeError,
  type WorkerEvent,
  type WorkerRequest,
  type WorkerSettings,
} from './pglite-worker-protocol.js';

const INT8_OID = 20;

/** A failure to reply with: `unavailable` makes it a DatabaseUnavailableError on the main thread. */
class Failure {
  constructor(
    readonly error: unknown,
    readonly unavailable?: string,
  ) {}
}

class Supervised {
  #generation = 0;
  #lite: PGlite | undefined;
  #opening: Promise<void> | undefined;
  #dead = false;
  #closed = false;
  readonly #wal = new WalWatch();
  /** What PGlite's `listen` returned, by listen id. */
  readonly #listens = new Map<number, () => Promise<void>>();
  /**
   * Requests waiting, by group; they run one after another, and a dead instance is never called, not even by
   * one queued before it died.
   */
  readonly #waiting = new Map<string, WorkerRequest[]>();
  /** The groups with requests waiting, taking turns. */
  readonly #round = new RoundRobin<string>();
  /** The session whose transaction is open: its statements alone run until it ends. */
  #pinned: number | undefined;
  #draining = false;
  /** `close`, run once every request sent before it has been answered. */
  #closeRequest: WorkerRequest | undefined;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly post: (event: WorkerEvent) => void,
  ) {}

  /** Opens the instance; `close` waits for it. */
  start(generation: number): void {
    this.#generation = generation;
    this.#opening = this.#open();
  }

  async #open(): Promise<void> {
    let lite: PGlite;
    try {
      const { dataDir, template } = this.settings;
      const parsers = { [INT8_OID]: (v: string) => Number(v) };
      // In memory from a dump: the options alone (PGlite reads `loadDataDir` only from the one-argument form).
      lite =
        dataDir === undefined && template !== undefined
          ? await PGlite.create({ parsers, loadDataDir: new Blob([await readFile(template)]) })
          : await PGlite.create(dataDir, { parsers });
    } catch (error) {
      this.post({ type: 'failed', error: serializeError(error) });
      return;
    }
    if (this.#closed) {
      await lite.close().catch(() => undefined);
      return;
    }
    this.#wal.install(lite, (error) => this.#die(error));
    this.#lite = lite;
    this.post({ type: 'opened', generation: this.#generation });
  }

  enqueue(request: WorkerRequest): void {
    if (request.op === 'close') this.#closeRequest = request;
    else {
      const group = request.op === 'query' ? request.group : '';
      const queue = this.#waiting.get(group);
      if (queue === undefined) {
        this.#waiting.set(group, [request]);
        this.#round.join(group);
      } else queue.push(request);
    }
    if (!this.#draining) void this.#drain();
  }

  /**
   * Answers waiting requests in turn, round-robin by group. After each one the thread takes a turn of its
   * event loop, so requests the main thread sent meanwhile join the round before the next is chosen.
   */
  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      for (let next = this.#next(); next !== undefined; next = this.#next()) {
        await this.#answer(next);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const close = this.#closeRequest;
      if (close !== undefined && this.#waiting.size === 0) {
        this.#closeRequest = undefined;
        await this.#answer(close);
      }
    } finally {
      this.#draining = false;
    }
  }

  /** The next request to answer: the open transaction's, else the head of the next group in the round. */
  #next(): WorkerRequest | undefined {
    if (this.#pinned !== undefined) {
      for (const [group, queue] of this.#waiting) {
        const at = queue.findIndex((r) => r.op === 'query' && r.session === this.#pinned);
        if (at < 0) continue;
        const [request] = queue.splice(at, 1);
        this.#dropIfEmpty(group, queue);
        return request;
      }
      return undefined;
    }
    const group = this.#round.next((key) => key);
    if (group === undefined) return undefined;
    const queue = this.#waiting.get(group) as WorkerRequest[];
    const request = queue.shift();
    this.#dropIfEmpty(group, queue);
    return request;
  }

  #dropIfEmpty(group: string, queue: WorkerRequest[]): void {
    if (queue.length > 0) return;
    this.#waiting.delete(group);
    this.#round.leave(group);
  }

  async #answer(request: WorkerRequest): Promise<void> {
    try {
      const value = await this.#handle(request);
      this.post({ type: 'reply', id: request.id, ok: true, value });
    } catch (failure) {
      const { error, unavailable } = failure instanceof Failure ? failure : new Failure(failure);
      this.post({ type: 'reply', id: request.id, ok: false, error: serializeError(error), unavailable });
    }
  }

  async #handle(request: WorkerRequest): Promise<QueryReply | undefined> {
    switch (request.op) {
      case 'query': {
        if (request.txn === 'begin') this.#pinned = request.session;
        try {
          const result = await this.#use((lite) =>
            lite.query(request.sql, [...request.params], request.arrays === true ? { rowMode: 'array' } : undefined),
          );
          return { rows: result.rows, affectedRows: result.affectedRows };
        } catch (error) {
          if (request.txn === 'begin') this.#pinned = undefined;
          throw error;
        } finally {
          if (request.txn === 'end') this.#pinned = undefined;
        }
      }
      case 'exec':
        await this.#use((lite) => lite.exec(request.sql));
        return undefined;
      case 'listen': {
        const { listenId } = request;
        const unlisten = await this.#use((lite) =>
          // PGlite calls this in a microtask while it reads the result of the statement that committed,
          // so the notification is posted before that statement's reply.
          lite.listen(request.channel, (payload) => this.post({ type: 'notification', listenId, payload })),
        );
        this.#listens.set(listenId, unlisten);
        return undefined;
      }
      case 'unlisten': {
        const unlisten = this.#listens.get(request.listenId);
        this.#listens.delete(request.listenId);
        if (unlisten !== undefined) await this.#use(() => unlisten());
        return undefined;
      }
      case 'injectWalWriteFailure':
        this.#live();
        this.#wal.failNext = true;
        return undefined;
      case 'close':
        await this.#close();
        return undefined;
      case 'open':
      case 'crash':
        return undefined;
    }
  }

  #live(): PGlite {
    if (this.#closed) throw new Failure(new Error('closed'), 'the embedded database is closed');
    if (this.#dead || this.#lite === undefined)
      throw new Failure(new Error('the instance died'), 'the embedded database died during this request');
    return this.#lite;
  }

  /** Runs `fn` on the instance, which must still be live; a fatal error marks it dead. */
  async #use<T>(fn: (lite: PGlite) => Promise<T>): Promise<T> {
    const lite = this.#live();
    try {
      return await fn(lite);
    } catch (error) {
      if (this.#dead || isFatal(error)) {
        this.#die(error);
        throw new Failure(error, 'the embedded database died');
      }
      throw error;
    }
  }

  /** Called synchronously where the death is seen: the main thread learns of it even if PGlite never returns. */
  #die(cause: unknown): void {
    if (this.#dead) return;
    this.#dead = true;
    this.post({ type: 'died', generation: this.#generation, error: serializeError(cause) });
  }

  async #close(): Promise<void> {
    this.#closed = true;
    await this.#opening;
    const lite = this.#lite;
    this.#lite = undefined;
    if (lite !== undefined && !this.#dead) await lite.close();
  }
}

/**
 * Watches the instance's writes to the WAL (PostgreSQL PANICs when one fails). `failNext` is the fault
 * injection of tests: the next WAL write fails with EIO, as on a failing disk.
 */
class WalWatch {
  failNext = false;

  install(lite: PGlite, onFailure: (error: unknown) => void): void {
    const fs = lite.Module.FS as unknown as EmscriptenFs;
    const write = fs.write;
    const watch = this;
    fs.write = function (stream, ...rest) {
      if (!String(stream.path).includes('/pg_wal/')) return write.call(this, stream, ...rest);
      try {
        if (watch.failNext) {
          watch.failNext = false;
          throw new fs.ErrnoError(EIO);
        }
        return write.call(this, stream, ...rest);
      } catch (error) {
        onFailure(error);
        throw error;
      }
    };
  }
}

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

if (parentPort !== null) {
  const port = parentPort;
  const supervised = new Supervised(workerData as WorkerSettings, (event) => port.postMessage(event));
  port.on('message', (request: WorkerRequest) => {
    // Fault injection (tests only): an uncaught exception ends this thread at once, as a crash (out of
    // memory) would; the requests sent after it are never answered.
    if (request.op === 'crash') throw new Error('injected crash of the PGlite worker');
    if (request.op === 'open') supervised.start(request.generation);
    else supervised.enqueue(request);
  });
}
