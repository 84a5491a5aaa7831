import { randomUUID } from 'node:crypto';
import { backoffDelay } from '../core/backoff.js';
import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * AWS quotas shared by every replica (tables of migration 008). Keys are opaque strings the caller composes
 * (`awsAccountId/region` and the quota's name). Times are the database's: replicas' clocks may disagree, the
 * database's is one. Statements are bounded like all others of the store (the pool's statement and query timeouts).
 */

/** Advisory lock class of slot acquisition, taken with `hashtext(key)` (others: log-ingest/events.ts). */
const LOCK_CLASS_SLOTS = 0x62657171;

/** One concurrent slot held. */
export interface SlotLease {
  readonly key: string;
  readonly id: string;
  /**
   * Fires when the lease could not be renewed before it ran out (the database was unreachable for a ttl, or the row
   * was gone): another replica may hold the slot by now.
   */
  readonly lost: AbortSignal;
  /** Gives the slot back. Safe to call twice; never rejects (a lease not deleted runs out after its ttl). */
  release(): Promise<void>;
}

export interface SlotBackoff {
  /** First wait after a full key, before jitter. */
  initialMs: number;
  /** Longest wait between two attempts, before jitter. */
  maxMs: number;
}

const DEFAULT_BACKOFF: SlotBackoff = { initialMs: 25, maxMs: 1_000 };

export class AwsQuotaStore {
  private readonly held = new Set<Lease>();

  constructor(
    private readonly db: Db,
    private readonly backoff: SlotBackoff = DEFAULT_BACKOFF,
  ) {}

  /**
   * Reserves the next start time of `key` at `ratePerSecond`, evenly spaced (a bucket of one), and waits until it
   * comes; resolves with the milliseconds waited. One statement reserves the slot: no two calls of any replica get
   * starts closer than 1/rate apart. A caller whose signal fires stops waiting and its slot goes unused.
   */
  async takeToken(key: string, ratePerSecond: number, signal?: AbortSignal): Promise<number> {
    if (!(ratePerSecond > 0)) throw new RangeError('takeToken: ratePerSecond must be > 0');
    signal?.throwIfAborted();
    const intervalUs = Math.ceil(1_000_000 / ratePerSecond);
    // clock_timestamp(), not now(): a call that waited for the row lock reserves from when it got it.
    const reserved = sql<{ wait_ms: number }>`insert into aws_rate_slots as s (key, next_at)
        values (${key}, clock_timestamp() + ${intervalUs}::bigint * interval '1 microsecond')
        on conflict (key) do update
          set next_at = greatest(s.next_at, clock_timestamp()) + ${intervalUs}::bigint * interval '1 microsecond'
        returning greatest(0, extract(epoch from s.next_at - clock_timestamp())::float8 * 1000
          - ${intervalUs / 1000}::float8) as wait_ms`.execute(this.db);
    const result = await untilAborted(reserved, signal);
    const waitMs = Math.ceil(Number(result.rows[0]?.wait_ms ?? 0));
    if (waitMs > 0) await delay(waitMs, signal);
    return waitMs;
  }

  /**
   * Takes one of `limit` slots of `key` for `ttlMs`, or answers undefined when all are held. Acquisitions of a key
   * take turns on an advisory lock, so replicas together never hold more than `limit`. The lease renews itself every
   * ttl/3 until released; a holder that dies gives its slot back when the ttl runs out.
   */
  async tryAcquireSlot(key: string, limit: number, ttlMs: number): Promise<SlotLease | undefined> {
    if (!(ttlMs >= 30)) throw new RangeError('tryAcquireSlot: ttlMs must be >= 30');
    const id = randomUUID();
    const sentAt = Date.now();
    const taken = await this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK_CLASS_SLOTS}, hashtext(${key}))`.execute(trx);
      // A statement of its own after the lock: its snapshot sees every slot committed before the lock was granted.
      const inserted = await sql<{ lease_id: string }>`with expired as (
          delete from aws_quota_leases where key = ${key} and expires_at <= clock_timestamp())
        insert into aws_quota_leases (key, lease_id, expires_at)
        select ${key}, ${id}, clock_timestamp() + ${ttlMs}::bigint * interval '1 millisecond'
        where (select count(*) from aws_quota_leases
          where key = ${key} and expires_at > clock_timestamp()) < ${limit}::bigint
        returning lease_id`.execute(trx);
      return inserted.rows.length > 0;
    });
    if (!taken) return undefined;
    const lease = new Lease(this.db, key, id, ttlMs, sentAt, () => this.held.delete(lease));
    this.held.add(lease);
    return lease;
  }

  /** `tryAcquireSlot` until a slot is free: polls with exponential backoff and jitter; rejects when `signal` fires. */
  async acquireSlot(key: string, limit: number, ttlMs: number, signal: AbortSignal): Promise<SlotLease> {
    const policy = { baseMs: this.backoff.initialMs, maxMs: this.backoff.maxMs, jitter: 0.5 } as const;
    for (let failures = 1; ; failures++) {
      signal.throwIfAborted();
      // A slot taken after the caller left is given back at once.
      const lease = await untilAborted(this.tryAcquireSlot(key, limit, ttlMs), signal, (late) => late?.release());
      if (lease !== undefined) return lease;
      await delay(Math.round(backoffDelay(failures, policy)), signal);
    }
  }

  /** Slots of `key` held now (leases not run out). */
  async count(key: string): Promise<number> {
    const row = await sql<{ n: number }>`select count(*)::int as n from aws_quota_leases
        where key = ${key} and expires_at > clock_timestamp()`.execute(this.db);
    return Number(row.rows[0]?.n ?? 0);
  }

  /** Releases every lease this store still holds (shutdown): other replicas need not wait for their ttl. */
  async close(): Promise<void> {
    await Promise.all([...this.held].map((lease) => lease.release()));
  }
}

/** A held slot, renewed every ttl/3 (a timer that does not keep the process alive). */
class Lease implements SlotLease {
  private readonly lostController = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  /** By the local clock, when the lease runs out unless renewed: from when the last successful renewal was sent. */
  private validUntil: number;

  constructor(
    private readonly db: Db,
    readonly key: string,
    readonly id: string,
    private readonly ttlMs: number,
    sentAt: number,
    private readonly forget: () => void,
  ) {
    this.validUntil = sentAt + ttlMs;
    this.schedule();
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  async release(): Promise<void> {
    if (this.done) return;
    this.stop();
    await sql`delete from aws_quota_leases where key = ${this.key} and lease_id = ${this.id}`
      .execute(this.db)
      .catch(() => undefined);
  }

  private stop(): void {
    this.done = true;
    clearTimeout(this.timer);
    this.forget();
  }

  /** Next renewal in ttl/3, or when the lease runs out if sooner (after failures): then it is renewed or lost. */
  private schedule(): void {
    const wait = Math.max(0, Math.min(Math.floor(this.ttlMs / 3), this.validUntil - Date.now()));
    this.timer = setTimeout(() => void this.renew(), wait);
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    if (this.done) return;
    const sentAt = Date.now();
    try {
      // Only a lease not yet run out is renewed: once it has, another replica may hold its slot.
      const renewed = await sql`update aws_quota_leases
          set expires_at = clock_timestamp() + ${this.ttlMs}::bigint * interval '1 millisecond'
          where key = ${this.key} and lease_id = ${this.id} and expires_at > clock_timestamp()
          returning 1`.execute(this.db);
      if (this.done) return;
      if (renewed.rows.length === 0) return this.lose(new Error(`the lease of ${this.key} ran out`));
      this.validUntil = sentAt + this.ttlMs;
    } catch (error) {
      if (this.done) return;
      // A failed renewal is tried again while the lease may still hold; after that it is lost.
      if (Date.now() >= this.validUntil) {
        return this.lose(new Error(`the lease of ${this.key} could not be renewed`, { cause: error }));
      }
    }
    this.schedule();
  }

  private lose(reason: Error): void {
    this.stop();
    this.lostController.abort(reason);
  }
}

/** `work`, or the signal's reason as soon as it fires; what `work` yields after that goes to `late`. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, late?: (value: T) => unknown): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      work.then(late, () => undefined);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Waits `ms`; rejects with the signal's reason when it fires first. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
