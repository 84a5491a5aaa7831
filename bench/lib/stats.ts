/**
 * The q-quantile (0…1) of samples, nearest rank; NaN for none. Samples that are not finite (a run
 * with nothing completed has no latency; NaN arrives over IPC as null) are left out.
 */
export function quantile(samples: readonly (number | null)[], q: number): number {
  const sorted = samples.filter((s): s is number => s !== null && Number.isFinite(s)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function median(samples: readonly (number | null)[]): number {
  return quantile(samples, 0.5);
}

/** One load run's figures. */
export interface RunFigures {
  /** Completed operations per second. */
  rate: number;
  /** Latency p50 and p99 in ms. */
  p50: number;
  p99: number;
}

/** The median run of several, field by field (each field's own median). */
export function medianRun(runs: readonly RunFigures[]): RunFigures {
  return {
    rate: median(runs.map((r) => r.rate)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
  };
}
