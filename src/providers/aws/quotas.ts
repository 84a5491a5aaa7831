import { setTimeout as sleep } from 'node:timers/promises';
import { type BackoffPolicy, backoffDelay } from '../../core/backoff.js';
import type { CloudAccount } from '../../core/log-query/types.js';
import type { AwsQuotaStore, SlotLease } from '../../store/aws-quotas.js';

export type { SlotLease } from '../../store/aws-quotas.js';

/** What a FilterLogEvents call waits on before it is sent (the shape of `TokenBucket.take`). */
export interface RateLimiter {
  take(signal?: AbortSignal): Promise<void>;
}

export interface AwsQuotaLimits {
  /** FilterLogEvents calls per second per AWS account and region, all replicas together (AWS: 5, not adjustable). */
  filterLogEventsPerSecond: number;
  /** Logs Insights queries running at once per AWS account and region, all replicas together (AWS: 30). */
  insightsMaxConcurrent: number;
  /** Live Tail sessions open at once per AWS account and region, all replicas together (AWS default: 15). */
  liveTailMaxSessions: number;
  /** How long the slots of a replica that died stay taken; a live holder renews its own every ttl/3. */
  leaseTtlMs: number;
}

export const AWS_QUOTA_DEFAULTS: AwsQuotaLimits = {
  filterLogEventsPerSecond: 5,
  insightsMaxConcurrent: 30,
  liveTailMaxSessions: 15,
  leaseTtlMs: 30_000,
};

/** Polling for free Live Tail sessions (a session lasts minutes to hours: no hurry). */
const LIVE_TAIL_BACKOFF: BackoffPolicy = { baseMs: 100, maxMs: 5_000, jitter: 0.5 };

export interface AwsQuotaOptions extends Partial<AwsQuotaLimits> {
  /**
   * The AWS account a Berth cloud account is (STS GetCallerIdentity; it should cache). Default: the cloud account's
   * own id, so only a cloud account's own calls share its quotas.
   */
  awsAccountIdOf?: (account: CloudAccount, signal?: AbortSignal) => Promise<string>;
}

/**
 * The AWS quotas of one account and region, held across the cluster in the database (`AwsQuotaStore`), keyed by the
 * AWS account id: Berth cloud accounts that are one AWS account share them. In each process the callers of a key
 * queue first come first served, and one of them at a time asks the database.
 */
export class AwsQuotas {
  readonly limits: AwsQuotaLimits;
  private readonly awsAccountIdOf: (account: CloudAccount, signal?: AbortSignal) => Promise<string>;
  private readonly rates = new Map<string, Turns<void>>();
  private readonly slots = new Map<string, Turns<SlotLease>>();
  private closed = false;

  constructor(
    private readonly store: AwsQuotaStore,
    options: AwsQuotaOptions = {},
  ) {
    const { awsAccountIdOf, ...limits } = options;
    this.limits = { ...AWS_QUOTA_DEFAULTS, ...limits };
    this.awsAccountIdOf = awsAccountIdOf ?? (async (account) => account.id);
  }

  /** The FilterLogEvents rate of the account's AWS account and region (every attempt, retries included, takes one). */
  filterLogEvents(account: CloudAccount, region: string): RateLimiter {
    return {
      take: async (signal) => {
        const key = await this.key('filter-log-events', account, region, signal);
        let turns = this.rates.get(key);
        if (turns === undefined) {
          const rate = this.limits.filterLogEventsPerSecond;
          turns = new Turns<void>(
            async (s) => void (await this.store.takeToken(key, rate, s)),
            () => undefined,
          );
          this.rates.set(key, turns);
        }
        await turns.wait(signal);
      },
    };
  }

  /** Waits for one of the Logs Insights query slots of the account's AWS account and region. */
  async insightsSlot(account: CloudAccount, region: string, signal: AbortSignal): Promise<SlotLease> {
    const key = await this.key('logs-insights', account, region, signal);
    let turns = this.slots.get(key);
    if (turns === undefined) {
      const { insightsMaxConcurrent: limit, leaseTtlMs: ttl } = this.limits;
      turns = new Turns<SlotLease>(
        (s) => this.store.acquireSlot(key, limit, ttl, s),
        (lease) => void lease.release(),
      );
      this.slots.set(key, turns);
    }
    return turns.wait(signal);
  }

  /**
   * Waits until `sessions` Live Tail sessions of the account's AWS account and region are free together (an upstream
   * of more than 10 log groups needs several) and holds them; resolves with their release. All or none: a caller
   * never sits on some while it waits for the rest, so two callers cannot hold each other up.
   */
  async liveTailSessions(
    account: CloudAccount,
    region: string,
    sessions: number,
    signal: AbortSignal,
  ): Promise<() => void> {
    const key = await this.key('live-tail', account, region, signal);
    const { liveTailMaxSessions: limit, leaseTtlMs: ttl } = this.limits;
    if (sessions > limit) throw new RangeError(`${sessions} Live Tail sessions asked for, ${limit} allowed`);
    const giveBack = (held: SlotLease[]) => Promise.all(held.map((lease) => lease.release()));
    let failures = 0;
    for (;;) {
      signal.throwIfAborted();
      const held: SlotLease[] = [];
      try {
        while (held.length < sessions) {
          const lease = await this.store.tryAcquireSlot(key, limit, ttl);
          if (lease === undefined) break;
          held.push(lease);
        }
      } catch (error) {
        await giveBack(held);
        throw error;
      }
      if (held.length === sessions && !signal.aborted) return () => void giveBack(held);
      await giveBack(held);
      failures += 1;
      const wait = Math.round(backoffDelay(failures, LIVE_TAIL_BACKOFF));
      await sleep(wait, undefined, { signal }).catch(() => Promise.reject(signal.reason));
    }
  }

  /** Stops the queues and gives back every slot this process holds. */
  async close(): Promise<void> {
    this.closed = true;
    const reason = new Error('AwsQuotas is closed');
    for (const turns of [...this.rates.values(), ...this.slots.values()]) turns.close(reason);
    await this.store.close();
  }

  private async key(quota: string, account: CloudAccount, region: string, signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    if (this.closed) throw new Error('AwsQuotas is closed');
    return `${quota}:${await this.awsAccountIdOf(account, signal)}/${region}`;
  }
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/**
 * The callers of one key in this process, first come first served. One acquisition from the database runs at a
 * time, for the queue rather than for one caller: what it gets goes to whoever is first when it comes (a caller
 * that left meanwhile loses nothing), and is given back (`discard`) when nobody waits any more.
 */
class Turns<T> {
  private readonly waiters: Waiter<T>[] = [];
  private current: AbortController | undefined;
  private pumping = false;
  private closedBy: Error | undefined;

  constructor(
    private readonly acquire: (signal: AbortSignal) => Promise<T>,
    private readonly discard: (value: T) => void,
  ) {}

  wait(signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.closedBy !== undefined) return Promise.reject(this.closedBy);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        // Nobody left: the acquisition under way is for no one.
        if (this.waiters.length === 0) this.current?.abort(signal!.reason);
        reject(signal!.reason);
      };
      const waiter: Waiter<T> = {
        resolve: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      void this.pump();
    });
  }

  close(reason: Error): void {
    this.closedBy = reason;
    this.current?.abort(reason);
    for (const waiter of this.waiters.splice(0)) waiter.reject(reason);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiters.length > 0 && this.closedBy === undefined) {
        const current = new AbortController();
        this.current = current;
        let value: T;
        try {
          value = await this.acquire(current.signal);
        } catch (error) {
          // Stopped because nobody waits (or closed): nothing to report. Else the first caller gets the error.
          if (!current.signal.aborted) this.waiters.shift()?.reject(error);
          continue;
        } finally {
          this.current = undefined;
        }
        const next = this.waiters.shift();
        if (next === undefined) this.discard(value);
        else next.resolve(value);
      }
    } finally {
      this.pumping = false;
    }
  }
}
