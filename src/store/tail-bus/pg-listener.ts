import pg from 'pg';
import { CONNECT_TIMEOUT_MS } from '../db.js';

export interface ListenerEvents {
  notify(payload: string): void;
  /** Listening (again): notifications sent before this may have been missed. */
  listening(): void;
}

export interface ListenerOptions {
  applicationName: string;
  /** A round trip on the connection this often; one failing or late drops it (a silent partition is noticed). */
  heartbeatMs?: number;
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

/**
 * One dedicated connection that LISTENs on a channel and connects again with backoff when it fails (the pattern of
 * src/store/change-feed.ts, which holds it for the cache channel).
 */
export class PgListener {
  #client: pg.Client | undefined;
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly events: ListenerEvents,
    private readonly options: ListenerOptions,
  ) {
    void this.#connect();
  }

  get listening(): boolean {
    return this.#client !== undefined;
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      application_name: this.options.applicationName,
    });
    client.on('error', () => this.#drop(client));
    client.on('end', () => this.#drop(client));
    client.on('notification', (message) => {
      if (client === this.#client && message.channel === this.channel) this.events.notify(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch {
      this.#drop(client);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    const heartbeatMs = this.options.heartbeatMs ?? 1_000;
    this.#heartbeat = setInterval(() => void this.#roundTrip(client, heartbeatMs), heartbeatMs).unref();
    this.events.listening();
  }

  async #roundTrip(client: pg.Client, timeoutMs: number): Promise<void> {
    try {
      await client.query({ text: 'select 1', query_timeout: timeoutMs } as pg.QueryConfig);
    } catch {
      this.#drop(client);
    }
  }

  /** Forgets `client` (once) and schedules the next attempt. */
  #drop(client: pg.Client): void {
    const dropped = client as pg.Client & { berthDropped?: boolean };
    if (dropped.berthDropped) return;
    dropped.berthDropped = true;
    client.end().catch(() => undefined);
    if (client === this.#client) {
      this.#client = undefined;
      clearInterval(this.#heartbeat);
    }
    if (this.#closed || this.#retry !== undefined) return;
    const base = this.options.retryDelayMs ?? 250;
    const delay = Math.min(base * 2 ** this.#failures, this.options.maxRetryDelayMs ?? 5_000);
    this.#failures += 1;
    // Jitter, so replicas that lost the database together do not come back in lockstep.
    this.#retry = setTimeout(() => void this.#connect(), delay * (0.8 + Math.random() * 0.4)).unref();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) {
      (client as pg.Client & { berthDropped?: boolean }).berthDropped = true;
      await client.end().catch(() => undefined);
    }
  }
}
