/** Token bucket shared by every FilterLogEvents call (retries included) of one account and region; FIFO, abortable. */
export class TokenBucket {
  private tokens: number;
  private updated: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters: { grant: () => void }[] = [];

  constructor(
    readonly ratePerSecond: number,
    readonly burst = 1,
    private readonly now: () => number = () => Date.now(),
  ) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new RangeError('TokenBucket: rate must be > 0 and burst >= 1');
    this.tokens = burst;
    this.updated = now();
  }

  get queued(): number {
    return this.waiters.length;
  }

  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.pump();
    });
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, t - this.updated) * this.ratePerSecond) / 1000);
    this.updated = t;
  }

  private pump(): void {
    if (this.timer !== undefined) return;
    this.refill();
    while (this.waiters.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      this.waiters.shift()!.grant();
    }
    if (this.waiters.length === 0) return;
    const wait = Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSecond));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, wait);
  }
}
