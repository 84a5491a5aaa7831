import PQueue from 'p-queue';

/** A bound on concurrent work (e.g. Insights queries per account and region): p-queue. */
export type ConcurrencyLimit = PQueue;

export function concurrencyLimit(size: number): ConcurrencyLimit {
  return new PQueue({ concurrency: Math.max(1, size) });
}

/**
 * Runs `work` in one of `limit`'s slots. A caller whose signal fires while it waits leaves the queue at once,
 * rejected with the signal's reason. Once `work` has started, its slot is held until `work` itself settles, even
 * past an abort: abandoned work that is slow to stop (a StopQuery, a PostgreSQL cancel) then still counts, so
 * it cannot pile up beyond the limit. p-queue's own `signal` option would free the slot as soon as the signal
 * fires, so it is given a signal that fires only while the task waits.
 */
export function runLimited<T>(
  limit: ConcurrencyLimit,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
): Promise<T> {
  if (signal === undefined) return limit.add(work);
  const waiting = new AbortController();
  const leave = () => waiting.abort(signal.reason);
  if (signal.aborted) leave();
  else signal.addEventListener('abort', leave, { once: true });
  const started = () => {
    signal.removeEventListener('abort', leave);
    return work();
  };
  return limit.add(started, { signal: waiting.signal }).finally(() => signal.removeEventListener('abort', leave));
}
