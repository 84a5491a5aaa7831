import type pg from 'pg';
import { asUnavailable } from '../../../core/database-unavailable.js';
import { withJitter } from '../../../core/backoff.js';
import type { Logger } from '../../../core/logger.js';
import { PgListen } from '../../pg-listen.js';
import { FailureLog } from './pg-pool.js';
import * as statements from './pg-statements.js';
import { type Batch, keyHash, padSeq, Subscriptions } from './subscriptions.js';
import { BUS_START, type BusEntry, type TailBus } from './types.js';

/** Seqs are the bigint identity, 19 digits (int8's largest has 19). */
const SEQ_DIGITS = 19;
const isPgSeq = (seq: string) => /^\d{19}$/.test(seq);
/** One read of a key: rows, and stored bytes (payloads may be ~1 MB each). */
const READ_ROWS = 256;
const READ_BYTES = 4 * 1024 * 1024;
/** Without a notification (lost, or the listener reconnecting) an entry arrives at most this late. */
const CATCH_UP_MS = 1_000;
/** The row bound of the keys this process published to is enforced this often (not on every publish). */
const TRIM_ROWS_MS = 1_000;
/** Every replica deletes rows past the age bound this often (keys whose holder died included). */
const TRIM_AGE_MS = 5_000;
const TRIM_AGE_BATCH = 5_000;
/** Trim marks not raised for a day are folded this often. */
const FORGET_TRIMS_MS = 60_000;

export interface PgBusOptions {
  url: string;
  replicaId: string;
  bufferMs: number;
  bufferRows: number;
  log?: Logger;
}

interface ReadRow {
  through: string | null;
  seq: string | null;
  payload: unknown;
  candidates: string | null;
}

/**
 * The bus on PostgreSQL: a buffer table, NOTIFY with the key hash and seq on every publish, one LISTEN connection
 * per process; a notification for a key with subscribers here reads the rows past their cursors. A catch-up check
 * every second (and when the listener is back) makes a lost notification a delay, and an outage a pause: reads
 * resume from each subscriber's cursor, and one whose entries were trimmed meanwhile is told (onGap).
 */
export class PgBus implements TailBus {
  readonly #subscriptions: Subscriptions;
  readonly #listener: PgListen;
  /** Keys being read, and whether another read is due once the current one ends. */
  readonly #reading = new Map<string, { again: boolean }>();
  /** Keys published to by this process since the last row trim. */
  #published = new Set<string>();
  #catchingUp = false;
  #trimming = false;
  #lastAgeTrim = 0;
  #lastForget = 0;
  /** Whether this process has published or subscribed: a replica that never tails does not trim either. */
  #used = false;
  readonly #timers: NodeJS.Timeout[] = [];
  #closed = false;
  readonly #readFailures: FailureLog;
  readonly #trimFailures: FailureLog;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgBusOptions,
  ) {
    this.#readFailures = new FailureLog('tail bus: reading the buffer', options.log);
    this.#trimFailures = new FailureLog('tail bus: trimming the buffer', options.log);
    this.#subscriptions = new Subscriptions({ wake: (hash) => this.#read(hash), log: options.log }, isPgSeq);
    this.#listener = new PgListen(
      {
        url: options.url,
        channels: [statements.TAIL_CHANNEL],
        applicationName: `berth-tail-listener ${options.replicaId}`,
        heartbeatMs: 1_000,
        retry: { baseMs: 250, maxMs: 5_000, jitter: 0.2 },
      },
      {
        notify: (_channel, payload) => {
          const hash = payload.slice(0, payload.lastIndexOf(':'));
          if (this.#subscriptions.has(hash)) this.#read(hash);
        },
        listening: () => void this.#catchUp(),
      },
    );
    this.#timers.push(
      setInterval(() => void this.#catchUp(), CATCH_UP_MS).unref(),
      setInterval(() => void this.#trim(), TRIM_ROWS_MS).unref(),
    );
  }

  async publish(key: string, payload: unknown): Promise<string> {
    if (this.#closed) throw new Error('tail bus closed');
    const hash = keyHash(key);
    this.#used = true;
    try {
      const { rows } = await this.pool.query<{ seq: string }>(statements.PUBLISH, [
        hash,
        JSON.stringify(payload ?? null),
      ]);
      this.#published.add(hash);
      return padSeq(rows[0]!.seq, SEQ_DIGITS);
    } catch (error) {
      throw asUnavailable(error);
    }
  }

  // The signature is the interface's: one place says what a subscriber is given.
  subscribe: TailBus['subscribe'] = (key, afterSeq, onEntries, onGap) => {
    if (this.#closed) return () => undefined;
    this.#used = true;
    return this.#subscriptions.add(keyHash(key), afterSeq, onEntries, onGap);
  };

  async latest(key: string): Promise<string | undefined> {
    try {
      return await this.#latest(keyHash(key));
    } catch (error) {
      throw asUnavailable(error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#subscriptions.clear();
    await this.#listener.close();
    await this.pool.end().catch(() => undefined);
  }

  async #latest(hash: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ seq: string | null }>(statements.LATEST, [hash]);
    const seq = rows[0]?.seq;
    return seq === null || seq === undefined ? undefined : padSeq(seq, SEQ_DIGITS);
  }

  /** Reads the key until its subscribers have all there is; calls while a read runs make it go once more. */
  #read(hash: string): void {
    const running = this.#reading.get(hash);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const state = { again: true };
    this.#reading.set(hash, state);
    void (async () => {
      try {
        while (state.again && !this.#closed) {
          state.again = false;
          if (this.#subscriptions.waiting(hash)) {
            this.#subscriptions.start(hash, (await this.#latest(hash)) ?? BUS_START);
          }
          const from = this.#subscriptions.from(hash);
          if (from === undefined) break;
          const { batch, more } = await this.#fetch(hash, from);
          if (this.#closed) break;
          if (this.#subscriptions.deliver(hash, from, batch) || more) state.again = true;
        }
        this.#readFailures.succeeded();
      } catch (error) {
        // The next catch-up tries again, from the same cursors.
        this.#readFailures.failed(error);
      } finally {
        this.#reading.delete(hash);
      }
    })();
  }

  async #fetch(hash: string, from: string): Promise<{ batch: Batch; more: boolean }> {
    const after = from === BUS_START ? '0' : from;
    const { rows } = await this.pool.query<ReadRow>(statements.READ, [hash, after, READ_ROWS, READ_BYTES]);
    const entries: BusEntry[] = [];
    let candidates = 0;
    for (const row of rows) {
      if (row.seq === null) continue;
      entries.push({ seq: padSeq(row.seq, SEQ_DIGITS), payload: row.payload });
      candidates = Number(row.candidates);
    }
    const through = rows[0]?.through;
    const batch: Batch = { entries };
    if (through !== null && through !== undefined) batch.floor = padSeq(through, SEQ_DIGITS);
    return { batch, more: entries.length > 0 && (candidates === READ_ROWS || entries.length < candidates) };
  }

  /** Reads the keys with subscribers that have something past their cursors, or subscribers still to start. */
  async #catchUp(): Promise<void> {
    const hashes = this.#subscriptions.hashes();
    if (this.#catchingUp || this.#closed || hashes.length === 0) return;
    this.#catchingUp = true;
    try {
      const { rows } = await this.pool.query<{ key_hash: string; newest: string | null }>(statements.NEWEST, [hashes]);
      for (const { key_hash: hash, newest } of rows) {
        const from = this.#subscriptions.from(hash);
        const behind = newest !== null && from !== undefined && padSeq(newest, SEQ_DIGITS) > from;
        if (behind || this.#subscriptions.waiting(hash)) this.#read(hash);
      }
      this.#readFailures.succeeded();
    } catch (error) {
      this.#readFailures.failed(error);
    } finally {
      this.#catchingUp = false;
    }
  }

  /** The row bound of the keys published here since the last pass; the age bound every TRIM_AGE_MS (jittered). */
  async #trim(): Promise<void> {
    if (this.#trimming || this.#closed || !this.#used) return;
    const ageDue = Date.now() - this.#lastAgeTrim >= withJitter(TRIM_AGE_MS, 0.2);
    if (this.#published.size === 0 && !ageDue) return;
    this.#trimming = true;
    const published = [...this.#published];
    this.#published = new Set();
    try {
      if (published.length > 0) await this.pool.query(statements.TRIM_ROWS, [published, this.options.bufferRows]);
      if (ageDue) {
        this.#lastAgeTrim = Date.now();
        await this.pool.query(statements.TRIM_AGE, [this.options.bufferMs, TRIM_AGE_BATCH]);
      }
      if (ageDue && Date.now() - this.#lastForget >= FORGET_TRIMS_MS) {
        this.#lastForget = Date.now();
        await this.pool.query(statements.FORGET_TRIMS);
      }
      this.#trimFailures.succeeded();
    } catch (error) {
      for (const hash of published) this.#published.add(hash);
      this.#trimFailures.failed(error);
    } finally {
      this.#trimming = false;
    }
  }
}
