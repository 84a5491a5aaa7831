import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { compileBoundedSqlFilter, sqlSize, type FilterNode, type SqlBounds } from '../../core/filter-tree/index.js';
import type { Level } from '../../core/log-level.js';
import type { BackendRow, LogTarget, TimeWindow } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';
import type { StatementRunner } from '../statement-runner.js';

/** One statement of the log query: sources of one account and region (a backend unit). */
export interface LogQueryEventsRequest {
  targets: LogTarget[];
  window: TimeWindow;
  /** The planned filter, pushed down into the statement within the bounds. */
  filter: FilterNode;
  limit: number;
}

export interface LogQueryEventRow {
  timestamp: number;
  message: string;
  log_group: string;
  log_stream: string;
  event_id: string;
  level: string;
  json: unknown;
}

/** The streams one branch of the statement reads in its log group: the union of the sources' selectors. */
interface GroupScope {
  name: string;
  all_streams: boolean;
  prefixes: string[];
  names: string[];
}

function groupScopes(targets: LogTarget[]): GroupScope[] {
  const scopes = new Map<string, GroupScope>();
  for (const t of targets) {
    let scope = scopes.get(t.logGroup);
    if (scope === undefined) {
      scope = { name: t.logGroup, all_streams: false, prefixes: [], names: [] };
      scopes.set(t.logGroup, scope);
    }
    if (t.streams.kind === 'all') scope.all_streams = true;
    else if (t.streams.kind === 'prefix') scope.prefixes.push(t.streams.prefix);
    else scope.names.push(...t.streams.names);
  }
  return [...scopes.values()];
}

/**
 * One statement whatever the number of groups: the groups and their stream selectors travel as one
 * jsonb parameter, and the filter appears once, inside a lateral subquery that is an index scan on
 * (account, region, group, timestamp desc, event_id desc) stopping at `limit` matching rows per group.
 * The targets share one account and region (the first target's are used).
 */
export function logQueryStatement(
  db: Executor,
  { targets, window, filter, limit }: LogQueryEventsRequest,
  bounds: SqlBounds,
): CompiledQuery<LogQueryEventRow> {
  const first = targets[0]!;
  const frame = (
    predicate: RawBuilder<boolean>,
  ) => sql<LogQueryEventRow>`select e.timestamp, e.message, e.log_group, e.log_stream, e.event_id, e.level, e.json
      from jsonb_to_recordset(${JSON.stringify(groupScopes(targets))}::jsonb)
        as g(name text, all_streams boolean, prefixes text[], names text[])
      cross join lateral (
        select timestamp, message, log_group, log_stream, event_id, level, json from log_events
        where cloud_account_id = ${first.account.id} and region = ${first.region} and log_group = g.name
          and timestamp >= ${window.startMs} and timestamp <= ${window.endMs}
          and (g.all_streams or log_stream = any(g.names)
            or exists (select 1 from unnest(g.prefixes) as p(prefix) where starts_with(log_stream, p.prefix)))
          and ${predicate}
        order by timestamp desc, event_id desc limit ${limit}
      ) e
      order by e.timestamp desc, e.event_id desc limit ${limit}`;
  const overhead = sqlSize(frame(sql<boolean>`true`));
  const { where } = compileBoundedSqlFilter(filter, {
    maxParams: bounds.maxParams - overhead.params,
    maxBytes: bounds.maxBytes - overhead.bytes,
  });
  return frame(where).compile(db);
}

/**
 * The rows of `logQueryStatement`, newest first (ties by event id descending), run by `run` so that
 * `signal` stops the statement on the database.
 */
export async function queryLogEvents(
  db: Executor,
  run: StatementRunner,
  request: LogQueryEventsRequest & { signal: AbortSignal },
  bounds: SqlBounds,
): Promise<BackendRow[]> {
  const result = await run(logQueryStatement(db, request, bounds), request.signal);
  return result.map((r) => ({
    timestamp: Number(r.timestamp),
    message: r.message,
    logGroup: r.log_group,
    logStream: r.log_stream,
    eventId: r.event_id,
    level: r.level as Level,
    json: r.json ?? undefined,
  }));
}
