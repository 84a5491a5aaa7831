/**
 * `BENCH_SCALE` (default 1) shrinks data sizes and durations for a quick check (0.05 while
 * developing); the figures in bench/results.json are from scale 1.
 */
export const SCALE = (() => {
  const raw = process.env.BENCH_SCALE;
  const value = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`BENCH_SCALE must be a positive number, got ${raw}`);
  return value;
})();

/** `n` scaled, at least `min`. */
export function scaled(n: number, min = 1): number {
  return Math.max(min, Math.round(n * SCALE));
}

/**
 * Seconds of one measured load run: 5 at scale 1, never under 2, since a run shorter than a few
 * request latencies under load measures its own start and end more than the steady state.
 */
export function runSeconds(base = 5): number {
  return Math.max(2, Math.round(base * SCALE * 10) / 10);
}

/** Measured runs per noisy row: the median of three. */
export const RUNS = 3;

/** Connections of every HTTP load, and concurrency of every SQL baseline. */
export const CONNECTIONS = 50;
