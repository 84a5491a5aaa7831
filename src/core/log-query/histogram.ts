import { describeLeaf, relax, simplifyFilter, type FilterCapabilities } from '../filter-tree/plan.js';
import { TRUE, type FilterNode } from '../filter-tree/schema.js';
import { LEVELS, type Level } from '../log-level.js';
import type { LogHistogramBucket, LogHistogramResponse } from '../schemas/log-histogram.js';
import type { TimeWindow } from './types.js';

export { DEFAULT_BUCKETS, MAX_BUCKETS } from '../schemas/log-histogram.js';

/**
 * Equal buckets of `widthMs` aligned to the window's start: bucket i covers
 * [startMs + i·widthMs, min(endMs, startMs + (i+1)·widthMs − 1)], both ends inclusive.
 */
export interface BucketLayout {
  startMs: number;
  endMs: number;
  widthMs: number;
  /**
   * The buckets that cover the window: the number asked for, or fewer when the window is too short for that many
   * whole-millisecond buckets (a 10 ms window in 60 buckets is 10 buckets of 1 ms); never an empty one.
   */
  count: number;
}

/** W = ceil((endMs − startMs + 1) / buckets), and as many buckets of W as cover the window. */
export function bucketLayout(window: TimeWindow, buckets: number): BucketLayout {
  const span = window.endMs - window.startMs + 1;
  const widthMs = Math.ceil(span / buckets);
  return { startMs: window.startMs, endMs: window.endMs, widthMs, count: Math.ceil(span / widthMs) };
}

/** The bucket a timestamp of the window falls in. */
export function bucketOf(layout: BucketLayout, timestamp: number): number {
  return Math.floor((timestamp - layout.startMs) / layout.widthMs);
}

/** Rows of one level in one bucket, as a backend counts them. */
export interface BucketCount {
  bucket: number;
  level: Level;
  count: number;
}

/** A bucket as the response carries it; its `counts` name the levels with at least one row, in LEVELS order. */
export type HistogramBucket = LogHistogramBucket;

/** The histogram's answer: the response schema's type (`LogHistogramResponse`). */
export type LogHistogramResult = LogHistogramResponse;

/** Every bucket of the layout, oldest first, with the counts summed over `counts` (several units may count one). */
export function histogramBuckets(layout: BucketLayout, counts: Iterable<BucketCount>): HistogramBucket[] {
  const sums = Array.from({ length: layout.count }, () => new Map<Level, number>());
  for (const c of counts) {
    const sum = sums[c.bucket];
    if (sum === undefined || c.count <= 0) continue;
    sum.set(c.level, (sum.get(c.level) ?? 0) + c.count);
  }
  return sums.map((sum, i) => {
    const startMs = layout.startMs + i * layout.widthMs;
    const counts: Partial<Record<Level, number>> = {};
    for (const level of LEVELS) {
      const n = sum.get(level);
      if (n !== undefined) counts[level] = n;
    }
    return { startMs, endMs: Math.min(layout.endMs, startMs + layout.widthMs - 1), counts };
  });
}

export interface AggregateFilterPlan {
  /** Only leaves the backend evaluates exactly itself: a superset of the filter's rows. */
  filter: FilterNode;
  /** One reason per dropped leaf, naming its path. */
  unsupported: string[];
}

/**
 * The filter an aggregate runs where nothing is filtered in process afterwards (the histogram): every leaf the
 * backend cannot push is relaxed as `planFilter` relaxes it — TRUE, or the weaker filter `prefilter` gives (a
 * regex's required literals), under an even number of `not`s; FALSE under an odd one — so the counts are those of
 * a superset of the filter's rows, and each such leaf is named in `unsupported`.
 */
export function planAggregateFilter(
  filter: FilterNode,
  capabilities: FilterCapabilities,
  path = 'filter',
): AggregateFilterPlan {
  const unsupported: string[] = [];
  const relaxed = relax(
    filter,
    path,
    false,
    (leaf) => capabilities.canPush(leaf),
    (leaf, at) =>
      unsupported.push(
        `${at}: ${describeLeaf(leaf)} is not supported by ${capabilities.backend} in a histogram; the counts include rows it would exclude`,
      ),
    (leaf) => capabilities.prefilter?.(leaf) ?? TRUE,
  );
  return { filter: simplifyFilter(relaxed), unsupported };
}
