import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../../../core/logger.js';
import { FailureLog } from './pg-pool.js';
import { keyHash } from './subscriptions.js';
import type { Lease, TailLeases } from './types.js';

/** $1 key hash, $2 holder, $3 token, $4 ttl ms. Takes a free or expired key; a live holder's row is left alone. */
const ACQUIRE = `
  INSERT INTO tail_leases AS l (key_hash, holder, token, expires_at)
  VALUES ($1::text, $2::text, $3::text, now() + $4::int * interval '1 millisecond')
  ON CONFLICT (key_hash) DO UPDATE
    SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at
    WHERE l.expires_at <= now()
  RETURNING l.key_hash`;

/** $1 key hashes, $2 their tokens, $3 ttl ms. Renews those still held and not expired; returns their key hashes. */
const RENEW = `
  UPDATE tail_leases l SET expires_at = now() + $3::int * interval '1 millisecond'
  FROM unnest($1::text[], $2::text[]) AS h(key_hash, token)
  WHERE l.key_hash = h.key_hash AND l.token = h.token AND l.expires_at > now()
  RETURNING l.key_hash`;

/** $1 key hash, $2 token. */
const RELEASE = `DELETE FROM tail_leases WHERE key_hash = $1::text AND token = $2::text`;

/** Rows of holders that died and whose key nobody took since (every renewal pass of an hour's worth of them). */
const FORGET_EXPIRED = `DELETE FROM tail_leases WHERE expires_at < now() - interval '1 hour'`;
const FORGET_EXPIRED_EVERY = 600;

export interface PgLeasesOptions {
  replicaId: string;
  ttlMs: number;
  log?: Logger;
}

class PgLease implements Lease {
  readonly #controller = new AbortController();
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    readonly key: string,
    readonly hash: string,
    readonly token: string,
    validUntil: number,
    private readonly forget: (lease: PgLease) => void,
    readonly release: () => Promise<void>,
  ) {
    this.extend(validUntil);
  }

  get lost(): AbortSignal {
    return this.#controller.signal;
  }

  get ended(): boolean {
    return this.#controller.signal.aborted;
  }

  /**
   * Held until `validUntil` by this process's clock: the time the renewal that granted it was sent, plus the ttl. The
   * database counts the ttl from when it ran the statement, later: the holder stops before anyone else may start.
   */
  extend(validUntil: number): void {
    if (this.ended) return;
    clearTimeout(this.#deadline);
    const remaining = validUntil - Date.now();
    if (remaining <= 0) this.end(new Error('tail lease lost: not renewed within its ttl'));
    else {
      this.#deadline = setTimeout(() => this.end(new Error('tail lease lost: not renewed within its ttl')), remaining);
      this.#deadline.unref();
    }
  }

  end(reason: Error): void {
    if (this.ended) return;
    clearTimeout(this.#deadline);
    this.forget(this);
    this.#controller.abort(reason);
  }
}

/**
 * Leases in PostgreSQL, by the database's clock. Every lease of the process is renewed by one statement every
 * ttl/3, bounded by ttl/3; a renewal that fails leaves the lease until its local deadline (two more tries), one that
 * finds the row gone, taken or expired ends it at once.
 */
export class PgLeases implements TailLeases {
  readonly #held = new Map<string, PgLease>();
  #timer: NodeJS.Timeout | undefined;
  #renewing = false;
  #passes = 0;
  #closed = false;
  readonly #failures: FailureLog;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgLeasesOptions,
  ) {
    this.#failures = new FailureLog('tail leases: reaching the database', options.log);
  }

  get held(): number {
    return this.#held.size;
  }

  async tryAcquire(key: string): Promise<Lease | undefined> {
    const hash = keyHash(key);
    if (this.#closed || this.#held.has(hash)) return undefined;
    const token = randomUUID();
    const sentAt = Date.now();
    try {
      const { rows } = await this.pool.query({
        text: ACQUIRE,
        values: [hash, this.options.replicaId, token, this.options.ttlMs],
        query_timeout: this.options.ttlMs,
      } as pg.QueryConfig);
      this.#failures.succeeded();
      if (rows.length === 0) return undefined;
    } catch (error) {
      this.#failures.failed(error);
      return undefined;
    }
    const release = async () => this.#release(lease);
    const lease: PgLease = new PgLease(key, hash, token, sentAt + this.options.ttlMs, (l) => this.#forget(l), release);
    if (this.#closed || this.#held.has(hash)) {
      await release();
      return undefined;
    }
    this.#held.set(hash, lease);
    this.#timer ??= setInterval(() => void this.#renew(), this.options.ttlMs / 3).unref();
    return lease;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#held.values()].map((lease) => lease.release()));
    clearInterval(this.#timer);
    await this.pool.end().catch(() => undefined);
  }

  #forget(lease: PgLease): void {
    if (this.#held.get(lease.hash) === lease) this.#held.delete(lease.hash);
    if (this.#held.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  async #release(lease: PgLease): Promise<void> {
    if (lease.ended && this.#held.get(lease.hash) !== lease) {
      // Lost or released before: a lost lease's row belongs to someone else or has expired.
      return;
    }
    lease.end(new Error('tail lease released'));
    try {
      await this.pool.query({
        text: RELEASE,
        values: [lease.hash, lease.token],
        query_timeout: this.options.ttlMs,
      } as pg.QueryConfig);
    } catch (error) {
      // The row runs out after its ttl.
      this.#failures.failed(error);
    }
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#held.size === 0) return;
    this.#renewing = true;
    const leases = [...this.#held.values()];
    const sentAt = Date.now();
    try {
      const { rows } = await this.pool.query<{ key_hash: string }>({
        text: RENEW,
        values: [leases.map((l) => l.hash), leases.map((l) => l.token), this.options.ttlMs],
        query_timeout: Math.max(1, Math.floor(this.options.ttlMs / 3)),
      } as pg.QueryConfig);
      this.#failures.succeeded();
      const renewed = new Set(rows.map((r) => r.key_hash));
      for (const lease of leases) {
        if (renewed.has(lease.hash)) lease.extend(sentAt + this.options.ttlMs);
        else lease.end(new Error('tail lease lost: taken over or expired'));
      }
      this.#passes += 1;
      if (this.#passes % FORGET_EXPIRED_EVERY === 0) await this.pool.query(FORGET_EXPIRED);
    } catch (error) {
      // Each lease stays until its deadline: the next passes may still renew it.
      this.#failures.failed(error);
    } finally {
      this.#renewing = false;
    }
  }
}
