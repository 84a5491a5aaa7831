import { mergeNewestFirst, type Sorted } from './merge.js';

/**
 * What one query unit (a set of sources queried together) returned: its
 * matching rows newest first, and how far back its raw rows reached.
 */
export interface UnitResult<T extends Sorted> {
  /** Rows that pass the whole filter, newest first. */
  rows: T[];
  /**
   * Every raw row of the unit with timestamp > coveredAfter was examined
   * (so every match above it is in `rows`). `startMs - 1` when the unit
   * read its whole window.
   */
  coveredAfter: number;
}

export interface Page<T> {
  rows: T[];
  /** Re-query with endTime = this to continue; 0 when no older rows exist. */
  nextEndTimeMs: number;
}

/**
 * Cuts one page out of the units' results so that walking a window with
 * `endTime = nextEndTimeMs` returns every row exactly once:
 * - only rows above every unit's coverage boundary are certain to be
 *   complete, so the page never includes rows at or below it;
 * - a page never splits a millisecond: when the limit falls inside one, the
 *   rows of that millisecond are left for the next page, whose inclusive
 *   `endTime` starts there — unless they are the whole page, in which case
 *   the millisecond is returned whole (the only time a page exceeds `limit`).
 */
export function cutPage<T extends Sorted>(units: UnitResult<T>[], limit: number, startMs: number): Page<T> {
  const boundary = units.reduce((b, u) => Math.max(b, u.coveredAfter), startMs - 1);
  const older = (ms: number) => (ms - 1 < startMs ? 0 : ms - 1);
  const rows: T[] = [];
  // Read by hand, not with for…of: leaving a for…of closes the generator, and the
  // rest of millisecond `edge` is read from it below.
  const merged = mergeNewestFirst(units.map((u) => u.rows));
  let overflow: T | undefined;
  for (let next = merged.next(); !next.done; next = merged.next()) {
    const row = next.value;
    if (row.timestamp <= boundary) break;
    if (rows.length === limit) {
      overflow = row;
      break;
    }
    rows.push(row);
  }
  // Everything above the boundary fits: continue from the boundary itself.
  if (overflow === undefined) return { rows, nextEndTimeMs: boundary < startMs ? 0 : boundary };
  const edge = rows[rows.length - 1]!.timestamp;
  if (overflow.timestamp < edge) return { rows, nextEndTimeMs: older(edge) };
  // The limit falls inside millisecond `edge`: leave that millisecond to the next page…
  const kept = rows.filter((r) => r.timestamp > edge);
  if (kept.length > 0) return { rows: kept, nextEndTimeMs: edge };
  // …unless it is the whole page: then return it whole, or paging could not move.
  rows.push(overflow);
  for (let next = merged.next(); !next.done && next.value.timestamp === edge; next = merged.next())
    rows.push(next.value);
  return { rows, nextEndTimeMs: older(edge) };
}
