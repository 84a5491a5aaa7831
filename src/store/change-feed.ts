import { Listeners } from '../core/listeners.js';
import type { Db, Store } from './db.js';
import { PgListen } from './pg-listen.js';
import type { PGliteSupervisor } from './pglite-supervisor.js';

/** The channel migration 004's triggers notify, with the written table's name as the payload. */
export const CHANGE_CHANNEL = 'berth_changes';

export type ChangeEvent =
  /** A statement that wrote `table` committed (on any replica, through any client). */
  | { kind: 'changed'; table: string }
  /** Every change committed from now on is delivered; what was learned before may be stale. */
  | { kind: 'listening' }
  /** Changes may go unseen until the next `listening`. */
  | { kind: 'lost'; error?: unknown };

/**
 * Tells this process about every write to the tables caches read, whichever replica or client made it
 * (PostgreSQL `LISTEN/NOTIFY`). While `listening` is false a change may go unseen: a cache built on the
 * feed must not answer then.
 */
export interface ChangeFeed {
  readonly listening: boolean;
  /** Events are delivered synchronously, in order; returns the unsubscribe. */
  subscribe(listener: (event: ChangeEvent) => void): () => void;
  /**
   * Resolves once every change committed before the call has been delivered, or the feed stopped listening
   * (read-your-writes on this replica: a response to a write waits for it).
   */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export interface ChangeFeedOptions {
  /** PostgreSQL: the first wait before listening again after the connection failed; doubles up to `maxRetryDelayMs`. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /**
   * PostgreSQL: a round trip on the listening connection this often (default 500 ms); one that fails or takes
   * longer than the interval counts as a dropped connection, so a silent partition is noticed within about
   * two intervals (TCP keepalive would take minutes).
   */
  heartbeatMs?: number;
}

/** The feed for the store's database: a dedicated PostgreSQL connection, or the embedded instance's own session. */
export function openChangeFeed(store: Store, options: ChangeFeedOptions = {}): ChangeFeed {
  if (store.target.kind === 'postgres') return new PostgresChangeFeed(store.target.url, options);
  if (store.supervisor === undefined) throw new Error('openChangeFeed: a PGlite store without its supervisor');
  return new PGliteChangeFeed(store.db, store.supervisor, options);
}

abstract class BaseChangeFeed implements ChangeFeed {
  readonly #listeners = new Listeners<[ChangeEvent]>();
  #listening = false;
  protected closed = false;

  constructor(protected readonly options: ChangeFeedOptions) {}

  get listening(): boolean {
    return this.#listening && !this.closed;
  }

  subscribe(listener: (event: ChangeEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  abstract settle(): Promise<void>;
  abstract close(): Promise<void>;

  protected changed(payload: string): void {
    if (payload !== '') this.#listeners.emit({ kind: 'changed', table: payload });
  }

  protected setListening(listening: boolean, error?: unknown): void {
    if (this.#listening === listening) return;
    this.#listening = listening;
    this.#listeners.emit(listening ? { kind: 'listening' } : { kind: 'lost', error });
  }
}

/** Listens on a dedicated connection (`PgListen`), which connects again with backoff when it fails. */
class PostgresChangeFeed extends BaseChangeFeed {
  readonly #listen: PgListen;
  #settling = false;
  #waiters: Array<() => void> = [];

  constructor(url: string, options: ChangeFeedOptions) {
    super(options);
    this.#listen = new PgListen(
      {
        url,
        channels: [CHANGE_CHANNEL],
        // Operators (and tests) find the listener of a process in pg_stat_activity by this.
        applicationName: `berth-change-feed ${process.pid}`,
        heartbeatMs: options.heartbeatMs ?? 500,
        retry: { baseMs: options.retryDelayMs ?? 500, maxMs: options.maxRetryDelayMs ?? 10_000, jitter: 0.2 },
      },
      {
        notify: (_channel, payload) => this.changed(payload),
        listening: () => this.setListening(true),
        lost: (error) => this.setListening(false, error),
      },
    );
  }

  /**
   * PostgreSQL signals a listening backend when a notifying transaction commits, and the backend sends the
   * notification before answering anything it receives after that: a round trip on the listening connection
   * that starts after the commit returns after the notification. Callers arriving while one is under way
   * share the next one.
   */
  settle(): Promise<void> {
    if (!this.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      if (!this.#settling) void this.#settleWaiters();
    });
  }

  async #settleWaiters(): Promise<void> {
    this.#settling = true;
    while (this.#waiters.length > 0) {
      const batch = this.#waiters.splice(0);
      // A failure drops the connection, which stops the caches answering: settled too.
      await this.#listen.roundTrip();
      for (const resolve of batch) resolve();
    }
    this.#settling = false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.setListening(false);
    this.closed = true;
    await this.#listen.close();
  }
}

/**
 * The embedded database notifies its own session: the worker forwards a notification before the reply of
 * the statement that committed it, so it is delivered before that statement's caller resumes. A `LISTEN`
 * dies with its instance, so the feed listens again on each instance the supervisor reopens.
 */
class PGliteChangeFeed extends BaseChangeFeed {
  readonly #unwatch: () => void;
  /** The generation of the instance listened to (or being listened to). */
  #generation: number | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly supervisor: PGliteSupervisor,
    options: ChangeFeedOptions,
  ) {
    super(options);
    this.#unwatch = supervisor.watch((generation) => {
      if (generation === undefined) this.#lost(new Error('the embedded database died'));
      else void this.#listenOn(generation);
    });
    if (supervisor.available) void this.#listenOn(supervisor.generation());
  }

  async #listenOn(generation: number): Promise<void> {
    clearTimeout(this.#retry);
    this.#generation = generation;
    try {
      // Holding the store's one connection keeps the LISTEN out of a transaction in progress: there it would
      // only take effect at its commit, and not at all if it rolled back.
      const unlisten = await this.db.connection().execute(() =>
        this.supervisor.listen(generation, CHANGE_CHANNEL, (payload) => {
          if (this.#generation === generation) this.changed(payload);
        }),
      );
      if (this.#generation !== generation || this.closed) {
        await unlisten().catch(() => undefined);
        return;
      }
      this.#unlisten = unlisten;
      this.setListening(true);
    } catch (error) {
      // A dead instance is reported by the supervisor, which reopens it; anything else is tried again.
      if (this.#generation !== generation || this.closed || !this.supervisor.available) return;
      this.#retry = setTimeout(() => void this.#listenOn(generation), this.options.retryDelayMs ?? 500).unref();
      this.setListening(false, error);
    }
  }

  #lost(error: unknown): void {
    clearTimeout(this.#retry);
    this.#generation = undefined;
    this.#unlisten = undefined;
    this.setListening(false, error);
  }

  settle(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.setListening(false);
    this.closed = true;
    this.#unwatch();
    clearTimeout(this.#retry);
    const unlisten = this.#unlisten;
    this.#generation = undefined;
    this.#unlisten = undefined;
    await unlisten?.().catch(() => undefined);
  }
}
