import type { FilterCapabilities, FilterNode } from '../core/filter-tree/index.js';
import type { BackendRow, LogTarget, TimeWindow } from '../core/log-query/types.js';

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
}

/** A log store that can answer the log query: the database (`local`) or CloudWatch Logs Insights (`aws`). */
export interface LogBackend {
  readonly capabilities: FilterCapabilities;
  /** Splits targets into the units the backend queries together (e.g. ≤ 50 log groups for Insights). */
  units(targets: LogTarget[]): LogTarget[][];
  fetch(request: FetchRequest): Promise<FetchResult>;
}
