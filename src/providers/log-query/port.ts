import type { FilterCapabilities, FilterNode } from '../../core/filter-tree/index.js';
import type { BucketCount, BucketLayout } from '../../core/log-query/histogram.js';
import type { BackendRow, LogTarget, TimeWindow } from '../../core/log-query/types.js';

export interface FetchRequest {
  /** One unit, as `units` made it: queried together, answered together. */
  targets: LogTarget[];
  window: TimeWindow;
  /** The planned filter the backend runs itself (a superset of what is asked). */
  filter: FilterNode;
  limit: number;
  signal: AbortSignal;
}

export interface FetchResult {
  /** Rows matching `filter`, newest first (ties by eventId descending), each event once. */
  rows: BackendRow[];
  /** True when the unit has no more matching rows in the window than those returned. */
  exhausted: boolean;
  /** Log groups of which the backend returned rows it could not read (dropped): the answer is partial for them. */
  missed?: string[];
  /**
   * True when every row matches `filter` exactly, by the evaluator's own definition: nothing of it was left out to
   * fit one statement. Rows of an exact fetch of an exact plan need no filtering in process. Only Berth's own
   * database says so; rows from elsewhere are checked again.
   */
  exact?: boolean;
}

export interface HistogramRequest {
  /** One unit, as `units` made it. */
  targets: LogTarget[];
  /** The window and its buckets. */
  layout: BucketLayout;
  /**
   * A filter of leaves the backend pushes (`capabilities.canPush`, `planAggregateFilter`): nothing filters its
   * rows afterwards.
   */
  filter: FilterNode;
  signal: AbortSignal;
}

export interface HistogramResult {
  /** Rows matching `filter` per bucket and level, each event once (bucket and level pairs in any order). */
  counts: BucketCount[];
  /** Log groups whose counts the backend could not read: the answer is partial for them. */
  missed?: string[];
  /** Why the counts are not exactly those of `filter` per level (a filter cut to fit, levels not derived). */
  inexact?: string[];
}

/** A log store that can answer the log query: the database (`local`) or CloudWatch Logs Insights (`aws`). */
export interface LogBackend {
  readonly capabilities: FilterCapabilities;
  /** Splits targets into the units the backend queries together (e.g. ≤ 50 log groups for Insights). */
  units(targets: LogTarget[]): LogTarget[][];
  fetch(request: FetchRequest): Promise<FetchResult>;
  /** Counts the unit's rows per bucket and level in one aggregate (one statement, one upstream query). */
  histogram(request: HistogramRequest): Promise<HistogramResult>;
}
