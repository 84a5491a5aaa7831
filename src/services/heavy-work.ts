import { appError } from '../core/errors.js';
import { FairQueue, QueueTimeoutError } from '../core/fair-queue.js';
import { currentTenant, runAsTenant } from '../core/tenant-context.js';

export interface HeavyWorkLimits {
  /** Heavy work running at once in this process. */
  max: number;
  perOrganization: number;
  perPrincipal: number;
  /** How long work may wait for its turn before it answers 429. */
  queueMs: number;
}

export interface HeavyClaim {
  organizationId: string;
  /**
   * Counted within `organizationId`'s share only. Omitted for work no principal asked for (the CLI): only the
   * organization's share applies.
   */
  principalId?: string;
  /**
   * Which request this is (`requestFlow`): within the principal's share, waiting work of different flows takes
   * turns, and copies of one request wait in one line.
   */
  flow?: string;
}

export interface HeavyRunOptions {
  signal?: AbortSignal;
  /**
   * Wait for a turn however long it takes instead of answering 429 past the queue time: for routes whose
   * statuses exclude 429 (the identity-provider route) and for work already under way (the next history batch
   * of an open stream).
   */
  wait?: boolean;
  /** A step of work already under way: served before new work of its organization (`FairClaim.continuing`). */
  continuing?: boolean;
}

/** Per organization: work that had to wait, work refused with 429, and the time waited. */
export interface HeavyWorkStats {
  queued: number;
  throttled: number;
  waitSeconds: number;
}

/** Organizations whose figures are kept; the least recently seen go first past it. */
const MAX_TRACKED_ORGANIZATIONS = 10_000;

/**
 * Heavy work (log queries, history reads, ingest) shares a process-wide budget: at most `max` at once, of which
 * `perOrganization` for one organization and `perPrincipal` for one principal within that organization (a
 * principal of several organizations has a share in each: work one organization asks of it never holds back its
 * work for another); waiting work takes turns across organizations. Work that cannot start within `queueMs`
 * answers 429 `http:request:rate-limited` with Retry-After. Within a principal's share, distinct requests (flows) take
 * turns; copies of one request wait first come, first served. While it runs, its statements are counted in the
 * organization's share of the database's own fair queue.
 */
export class HeavyWork {
  readonly #queue: FairQueue;
  readonly #stats = new Map<string, HeavyWorkStats>();

  constructor(private readonly limits: HeavyWorkLimits) {
    this.#queue = new FairQueue(
      { max: limits.max, perGroup: limits.perOrganization, perMember: limits.perPrincipal },
      // A request refused with 429 keeps its line's place while its client waits Retry-After and sends it again.
      { keepPlaceMs: (retryAfterSeconds(limits.queueMs) + RETRY_SLACK_SECONDS) * 1000 },
    );
  }

  get running(): number {
    return this.#queue.running;
  }

  get waiting(): number {
    return this.#queue.waiting;
  }

  /** A snapshot of the per-organization figures (for /metrics). */
  stats(): ReadonlyMap<string, HeavyWorkStats> {
    return this.#stats;
  }

  async run<T>(claim: HeavyClaim, options: HeavyRunOptions, work: () => Promise<T>): Promise<T> {
    const queueClaim = {
      group: claim.organizationId,
      member: claim.principalId,
      flow: claim.flow,
      continuing: options.continuing,
    };
    let release = this.#queue.tryAcquire(queueClaim);
    if (release === undefined) {
      const stats = this.#statsOf(claim.organizationId);
      stats.queued += 1;
      const started = performance.now();
      try {
        release = await this.#queue.acquire(queueClaim, {
          signal: options.signal,
          timeoutMs: options.wait === true ? undefined : this.limits.queueMs,
        });
      } catch (error) {
        if (!(error instanceof QueueTimeoutError)) throw error;
        stats.throttled += 1;
        throw appError('http:request:rate-limited', {
          description: `Too much heavy work at once (${shareWords[error.share]}); try again shortly.`,
          headers: { 'retry-after': String(retryAfterSeconds(this.limits.queueMs)) },
        });
      } finally {
        stats.waitSeconds += (performance.now() - started) / 1000;
      }
    }
    const tenant = { ...currentTenant(), organizationId: claim.organizationId };
    try {
      return await runAsTenant(tenant, work);
    } finally {
      release();
    }
  }

  /**
   * Runs each step of `steps` (an async iterator: history batches) as heavy work of its own, waiting for turns
   * ahead of new work of its organization (it is under way: it can wait, never be refused).
   */
  async *eachStep<T>(claim: HeavyClaim, signal: AbortSignal | undefined, steps: AsyncIterable<T>): AsyncGenerator<T> {
    const iterator = steps[Symbol.asyncIterator]();
    try {
      while (true) {
        const next = await this.run(claim, { signal, wait: true, continuing: true }, () => iterator.next());
        if (next.done === true) return;
        yield next.value;
      }
    } finally {
      await iterator.return?.();
    }
  }

  #statsOf(organizationId: string): HeavyWorkStats {
    let stats = this.#stats.get(organizationId);
    if (stats === undefined) {
      if (this.#stats.size >= MAX_TRACKED_ORGANIZATIONS) {
        const oldest = this.#stats.keys().next().value;
        if (oldest !== undefined) this.#stats.delete(oldest);
      }
      stats = { queued: 0, throttled: 0, waitSeconds: 0 };
      this.#stats.set(organizationId, stats);
    }
    return stats;
  }
}

/** What a 429 of heavy work asks the client to wait: the queue time, in whole seconds. */
function retryAfterSeconds(queueMs: number): number {
  return Math.max(1, Math.ceil(queueMs / 1000));
}

/** How much longer than Retry-After a line keeps its place for the request to come back. */
const RETRY_SLACK_SECONDS = 1;

const shareWords = {
  process: 'the service is at its limit',
  group: "the organization's share is in use",
  member: "the principal's share in this organization is in use",
} as const;
