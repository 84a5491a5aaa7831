import { formatCount, plural } from './format.js';

export interface QueryCounts {
  /** Rows the histogram counted; undefined while it counts or after it failed. */
  total?: number;
  /** The histogram's request failed (or was never answered because the query failed). */
  totalFailed: boolean;
  /** Rows in the table. */
  shown: number;
  loading: boolean;
  failed: boolean;
  /** Older rows of the window remain to be loaded. */
  more: boolean;
}

/** What the table holds: a count (`1,000 rows`), and what it is of the whole (`shown, newest first — …`). */
export interface Summary {
  count: string;
  detail?: string;
}

/** The histogram's heading (what matches) and the table's summary (what of it the table shows). */
export function queryHeading(c: QueryCounts): { total: string; summary: Summary } {
  const total =
    c.total !== undefined ? plural(c.total, 'matching row') : c.totalFailed ? 'Count unavailable' : 'Counting…';
  let summary: Summary;
  if (c.loading) summary = { count: 'Loading…' };
  else if (c.failed)
    summary =
      c.shown > 0
        ? { count: plural(c.shown, 'row'), detail: 'shown from before the error' }
        : { count: 'No rows', detail: 'the query failed' };
  else if (c.more) summary = { count: plural(c.shown, 'row'), detail: 'shown, newest first — Load older for the rest' };
  else if (c.total !== undefined && c.total > c.shown)
    // The histogram counted rows the query did not return (written between the two requests, or a source missed).
    summary = { count: plural(c.shown, 'row'), detail: `shown of ${formatCount(c.total)} counted` };
  else summary = { count: plural(c.shown, 'row') };
  return { total, summary };
}

/** A live tail's summary: rows kept, and, when the browser dropped some of what it read, how many it read. */
export function liveHeading(kept: number, read: number): Summary {
  if (read <= kept) return { count: plural(kept, 'live row') };
  return {
    count: plural(kept, 'live row'),
    detail: `shown of ${formatCount(read)} read — the rest filtered in the browser`,
  };
}
