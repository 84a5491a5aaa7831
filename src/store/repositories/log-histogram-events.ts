import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { compileBoundedSqlFilter, sqlSize, type FilterNode, type SqlBounds } from '../../core/filter-tree/index.js';
import type { BucketLayout } from '../../core/log-query/histogram.js';
import type { LogTarget } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';
import { groupScopes } from './log-query-events.js';

/** One aggregate of the log histogram: sources of one account and region (a backend unit). */
export interface LogHistogramEventsRequest {
  targets: LogTarget[];
  layout: BucketLayout;
  /** A filter of pushable leaves only (a regex is never run in PostgreSQL). */
  filter: FilterNode;
}

export interface LogHistogramEventRow {
  bucket: number;
  level: string;
  n: number;
}

/**
 * One statement counting the unit's rows per bucket and level. The groups and their stream selectors travel as one
 * jsonb parameter, as in `logQueryStatement`, so an event two sources of a group read is counted once, and the
 * filter is the query's pushed-down SQL (the same compiler, within the same bounds). Each group is a range scan
 * of the (account, region, group, timestamp) index; the bucket is integer division of the offset from the window's
 * start (never negative inside the window, so it rounds down). `relaxed` counts the filter's leaves dropped to fit
 * the bounds: the counts are then those of a superset.
 */
export function logHistogramStatement(
  db: Executor,
  { targets, layout, filter }: LogHistogramEventsRequest,
  bounds: SqlBounds,
): { query: CompiledQuery<LogHistogramEventRow>; relaxed: number } {
  const first = targets[0]!;
  const frame = (predicate: RawBuilder<boolean>) => sql<LogHistogramEventRow>`select
        ((e.timestamp - ${layout.startMs}::bigint) / ${layout.widthMs}::bigint)::int as bucket,
        e.level, count(*)::int as n
      from jsonb_to_recordset(${JSON.stringify(groupScopes(targets))}::jsonb)
        as g(name text, all_streams boolean, prefixes text[], names text[])
      cross join lateral (
        select timestamp, level from log_events
        where cloud_account_id = ${first.account.id} and region = ${first.region} and log_group = g.name
          and timestamp >= ${layout.startMs} and timestamp <= ${layout.endMs}
          and (g.all_streams or log_stream = any(g.names)
            or exists (select 1 from unnest(g.prefixes) as p(prefix) where starts_with(log_stream, p.prefix)))
          and ${predicate}
      ) e
      group by 1, 2`;
  const overhead = sqlSize(frame(sql<boolean>`true`));
  const { where, relaxed } = compileBoundedSqlFilter(filter, {
    maxParams: bounds.maxParams - overhead.params,
    maxBytes: bounds.maxBytes - overhead.bytes,
  });
  return { query: frame(where).compile(db), relaxed };
}
