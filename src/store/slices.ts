/**
 * Heavy reads (a log query's page, a history batch) as a series of short statements. One statement that
 * walks a whole window holds the database for as long as the walk takes: PGlite runs one statement at a
 * time, so every other tenant waits behind it, and a PostgreSQL connection is held as long. Each slice
 * instead scans at most a budget of rows and says where it stopped; the next slice starts there. The
 * budget adapts to each slice's measured time so that one slice takes about `sliceMs` (DB_SLICE_MS):
 * statements of other tenants queued meanwhile run between two slices, and an abort stops the read at the
 * next slice.
 */

/** How slices are sized. */
export interface SliceSizing {
  /** How long one slice should hold the database (DB_SLICE_MS). */
  sliceMs: number;
  /** Rows the first slice of a read may scan. */
  initialRows?: number;
  /** The fewest rows a slice scans (a filter may cost milliseconds a row: a slice of one row must be allowed). */
  minRows?: number;
  maxRows?: number;
  /** Told about every slice once it has run (tests, diagnostics). */
  onSlice?: (slice: SliceReport) => void;
}

/** One slice as measured. */
export interface SliceReport {
  /** The rows it was allowed to scan. */
  budget: number;
  /** The rows it scanned. */
  scanned: number;
  /** How long the database spent on it (its own clock: time queued behind other statements is not counted). */
  ms: number;
}

/**
 * The first slice of a read is small: how long a row takes depends on the filter and on the messages (up to
 * 256 KiB each), neither known before the read; a slice that ran fast grows the next one quickly.
 */
export const DEFAULT_SLICE_ROWS = { initial: 100, min: 1, max: 100_000 } as const;
/**
 * The first slice of a read that tests short columns only (levels, streams, transaction ids: no message, no JSON),
 * which cost about the same for every row: a page of 1,000 rows fits in it.
 */
export const SHORT_COLUMNS_FIRST_SLICE = 2_000;
/**
 * A slice grows the budget by the ratio of the target to its time, at most this many times over: PGlite's clock
 * counts whole milliseconds, so a slice measured at 0–1 ms says little more than "fast".
 */
const MAX_GROWTH = 16;

/** The budget of the next slice, from the measured time of the ones before it. */
export class SliceSizer {
  private rows: number;
  private readonly min: number;
  private readonly max: number;

  constructor(private readonly sizing: SliceSizing) {
    this.min = Math.max(1, sizing.minRows ?? DEFAULT_SLICE_ROWS.min);
    this.max = Math.max(this.min, sizing.maxRows ?? DEFAULT_SLICE_ROWS.max);
    this.rows = this.clamp(sizing.initialRows ?? DEFAULT_SLICE_ROWS.initial);
  }

  /** Rows the next slice may scan. */
  get budget(): number {
    return this.rows;
  }

  /** A slice allowed `budget` rows scanned `scanned` of them in `ms`. */
  record(slice: SliceReport): void {
    const target = this.sizing.sliceMs;
    if (slice.scanned === 0) {
      // Nothing known scanned (a last slice that reached the end of the window keeping nothing): no rate to learn.
    } else if (slice.ms > target) {
      // Too slow: at the rate just measured, a slice of `target` ms. Shrinks at once, however far.
      this.rows = this.clamp((slice.scanned * target) / slice.ms);
    } else if (slice.scanned >= slice.budget && slice.budget >= this.rows) {
      // It used the whole budget and had time left: grow by the same ratio, MAX_GROWTH times over at most.
      this.rows = this.clamp(Math.min(this.rows * MAX_GROWTH, (slice.scanned * target) / Math.max(slice.ms, 1)));
    }
    this.sizing.onSlice?.(slice);
  }

  private clamp(rows: number): number {
    return Math.min(this.max, Math.max(this.min, Math.floor(rows)));
  }
}

/** What one slice did: whether the read is over, and its report for the sizer. */
export interface SliceOutcome extends SliceReport {
  done: boolean;
}

/**
 * Runs `slice` with the sizer's budget until it says it is done. The signal is checked before every slice:
 * an abort ends the read with the signal's reason at the next slice boundary.
 */
export async function runSlices(
  sizer: SliceSizer,
  signal: AbortSignal | undefined,
  slice: (budget: number) => Promise<SliceOutcome>,
): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    const outcome = await slice(sizer.budget);
    sizer.record(outcome);
    if (outcome.done) return;
  }
}

/**
 * `total` rows shared by lanes in proportion to `weights`, each lane at least one row (a lane given nothing
 * would cover nothing, and the read could not move past it).
 */
export function shareBudget(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((s, w) => s + w, 0);
  return weights.map((w) => Math.max(1, Math.floor((total * w) / sum)));
}

/**
 * The rows a read should scan next for `remaining` more rows, `kept` of the `scanned` rows so far having been
 * kept: before the first slice, as many (a read without a filter keeps every row); then a little more than the
 * rate says, so that the last slice of a read is not one row short. `lanes`: each lane scans one row at least.
 */
export function rowsWanted(remaining: number, kept: number, scanned: number, lanes: number): number {
  if (scanned === 0) return remaining + lanes;
  const rate = Math.max(kept, 1) / scanned;
  return Math.ceil((remaining / rate) * 1.25) + lanes;
}
