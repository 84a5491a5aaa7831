import { sql } from 'kysely';
import { compileBoundedSqlFilter, sqlSize, type FilterNode, type SqlBounds } from '../../core/filter-tree/index.js';
import type { BucketLayout } from '../../core/log-query/histogram.js';
import type { LogTarget } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';
import { SliceSizer, type SliceSizing } from '../slices.js';
import type { StatementRunner } from '../statement-runner.js';
import { countInSlices, laneSliceQuery, type LaneScan, type SliceCount } from '../repositories/log-event-slices.js';
import { firstSliceRows, queryLanes } from './events.js';

/** One aggregate of the log histogram: sources of one account and region (a backend unit). */
export interface LogHistogramEventsRequest {
  targets: LogTarget[];
  layout: BucketLayout;
  /** A filter of pushable leaves only (a regex is never run in PostgreSQL). */
  filter: FilterNode;
  signal: AbortSignal;
}

/**
 * The unit's rows counted per bucket and level, in slices (log-event-slices.ts): the lanes the log query would
 * scan (a group, or a group and a level), each row once however many sources of its group read it, the filter
 * compiled as the query compiles it, within the same bounds. No statement scans more than a slice's budget, so
 * a window of a million rows holds the database about DB_SLICE_MS at a time, as the query does. `relaxed` counts
 * the filter's leaves dropped to fit the bounds: the counts are then those of a superset.
 */
export async function countLogEventsSliced(
  db: Executor,
  run: StatementRunner,
  { targets, layout, filter, signal }: LogHistogramEventsRequest,
  bounds: SqlBounds,
  sizing: SliceSizing,
): Promise<{ counts: SliceCount[]; relaxed: number }> {
  const first = targets[0]!;
  const scan = (keep: LaneScan['keep']): LaneScan => ({
    accountId: first.account.id,
    region: first.region,
    lanes: queryLanes(targets, filter),
    window: { startMs: layout.startMs, endMs: layout.endMs },
    order: 'oldest',
    keep,
    columns: ['level'],
  });
  // The filter is compiled once, within what a slice statement leaves of the bounds.
  const frame = laneSliceQuery({
    ...scan(sql<boolean>`true`),
    after: { ts: 0, id: '' },
    budgets: [1],
    limit: 0,
    aggregate: layout,
  });
  const overhead = sqlSize(frame);
  const { where, relaxed } = compileBoundedSqlFilter(filter, {
    maxParams: bounds.maxParams - overhead.params,
    maxBytes: bounds.maxBytes - overhead.bytes,
  });
  const counts = await countInSlices(
    (query) => run(query.compile(db), signal),
    scan(where),
    layout,
    new SliceSizer({ ...sizing, initialRows: sizing.initialRows ?? firstSliceRows(filter, sizing.sliceMs) }),
    signal,
  );
  return { counts, relaxed };
}
