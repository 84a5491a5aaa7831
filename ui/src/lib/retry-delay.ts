// How long a live tail waits before it reconnects.

export interface Backoff {
  /** The first wait, when the server gave no `retry:` (ms). */
  initialMs: number;
  /** No wait is longer, unless the server asked for more with `retry:` or Retry-After (ms). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 1_000, maxMs: 30_000 };

/**
 * The wait before attempt `attempt + 1` (0 for the first retry): `base · 2^attempt` capped at the cap, then
 * "equal jitter" (between half of it and all of it) so that clients cut off together do not return together.
 * `base` is the server's `retry:` when it sent one, and a wait never drops below it.
 */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number, serverRetryMs?: number): number {
  const base = serverRetryMs ?? backoff.initialMs;
  const cap = Math.max(backoff.maxMs, serverRetryMs ?? 0);
  const exp = Math.min(cap, base * 2 ** Math.min(attempt, 30));
  const jittered = Math.round(exp / 2 + (random() * exp) / 2);
  return Math.max(jittered, serverRetryMs ?? 0);
}

/** A Retry-After header (seconds, or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
