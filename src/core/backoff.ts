/**
 * Waiting before trying again: the wait doubles with each failure in a row, from `baseMs` up to `maxMs`, and
 * jitter spreads it so that processes that failed together (replicas that lost the database at once) do not
 * come back in lockstep.
 */
export interface BackoffPolicy {
  /** The wait after the first failure (before jitter). */
  baseMs: number;
  /** The wait stops doubling here (before jitter). */
  maxMs: number;
  jitter: Jitter;
}

/**
 * How a wait `w` is spread: `none`, exactly `w`; `equal`, a random point of its upper half, [w/2, w); a number
 * `s`, a random point within ±s of it, [w(1−s), w(1+s)).
 */
export type Jitter = 'none' | 'equal' | number;

/**
 * The wait before the next attempt after `failures` failures in a row: none after none, then `baseMs`, twice
 * that, … up to `maxMs`, spread by the policy's jitter (`random` is for tests).
 */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  if (failures <= 0) return 0;
  // The exponent is bounded so that 2 ** n stays finite (a zero base then stays 0, never NaN).
  const wait = Math.min(policy.baseMs * 2 ** Math.min(failures - 1, 1023), policy.maxMs);
  return withJitter(wait, policy.jitter, random);
}

/** `ms` spread by `jitter` (see {@link Jitter}); also for periodic work that replicas should not do in step. */
export function withJitter(ms: number, jitter: Jitter, random: () => number = Math.random): number {
  if (jitter === 'none') return ms;
  if (jitter === 'equal') return ms * (0.5 + random() / 2);
  return ms * (1 - jitter + random() * (2 * jitter));
}
