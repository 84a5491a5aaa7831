import pg from 'pg';
import { type BackoffPolicy, backoffDelay } from '../core/backoff.js';
import { CONNECT_TIMEOUT_MS } from './db.js';

export interface PgListenEvents {
  /** A notification on one of the channels. */
  notify(channel: string, payload: string): void;
  /** Listening (again): notifications sent before this may have been missed. */
  listening(): void;
  /** No longer listening (the connection failed or ended): notifications may go unseen until `listening`. */
  lost?(error: unknown): void;
}

export interface PgListenOptions {
  url: string;
  /** Plain lowercase identifiers (they are written into `LISTEN` as they are). */
  channels: readonly string[];
  /** Operators (and tests) find the connection in pg_stat_activity by this. */
  applicationName: string;
  /**
   * A round trip on the connection this often; one that fails or takes longer than the interval counts as a
   * dropped connection, so a silent partition is noticed within about two intervals (TCP keepalive would
   * take minutes).
   */
  heartbeatMs: number;
  /** The waits before connecting again while attempts fail. */
  retry: BackoffPolicy;
}

type Dropped = pg.Client & { berthDropped?: boolean };

/**
 * A dedicated PostgreSQL connection (never one of a pool's: a pooled connection is shared and reset between
 * users) that LISTENs on channels, connects again with backoff when it fails, and checks itself with a
 * heartbeat. The change feed (cache invalidation) and the tail bus each hold one.
 */
export class PgListen {
  #client: pg.Client | undefined;
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly options: PgListenOptions,
    private readonly events: PgListenEvents,
  ) {
    for (const channel of options.channels) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`PgListen: not a plain channel name: ${channel}`);
    }
    void this.#connect();
  }

  /** Whether the connection listens now (every notification from now on is delivered). */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  /**
   * A round trip on the listening connection (nothing when not listening). A notification committed before
   * the call is delivered before it resolves; one that fails or is late drops the connection. Never rejects.
   */
  async roundTrip(): Promise<void> {
    const client = this.#client;
    if (client !== undefined) await this.#roundTrip(client);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) {
      (client as Dropped).berthDropped = true;
      await client.end().catch(() => undefined);
    }
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      application_name: this.options.applicationName,
    });
    client.on('error', (error) => this.#drop(client, error));
    client.on('end', () => this.#drop(client));
    client.on('notification', (message) => {
      if (client === this.#client && this.options.channels.includes(message.channel)) {
        this.events.notify(message.channel, message.payload ?? '');
      }
    });
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      this.#drop(client, error);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    this.#heartbeat = setInterval(() => void this.#roundTrip(client), this.options.heartbeatMs).unref();
    this.events.listening();
  }

  /** `select 1` on `client`; one that fails or is late drops it. Never rejects. */
  async #roundTrip(client: pg.Client): Promise<void> {
    try {
      await client.query({ text: 'select 1', query_timeout: this.options.heartbeatMs } as pg.QueryConfig);
    } catch (error) {
      this.#drop(client, error);
    }
  }

  /** Forgets `client` (once) and schedules the next attempt. */
  #drop(client: pg.Client, error?: unknown): void {
    const dropped = client as Dropped;
    if (dropped.berthDropped) return;
    dropped.berthDropped = true;
    client.end().catch(() => undefined);
    if (client === this.#client) {
      this.#client = undefined;
      clearInterval(this.#heartbeat);
      this.events.lost?.(error ?? new Error('the listening connection ended'));
    }
    if (this.#closed || this.#retry !== undefined) return;
    this.#failures += 1;
    this.#retry = setTimeout(() => void this.#connect(), backoffDelay(this.#failures, this.options.retry)).unref();
  }
}
