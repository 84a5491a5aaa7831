import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import { hasCaseVariants } from '../../core/filter-tree/case-fold.js';
import {
  compileBoundedSqlFilter,
  isLeaf,
  sqlSize,
  type FilterNode,
  type SqlBounds,
} from '../../core/filter-tree/index.js';
import type { Level } from '../../core/log-level.js';
import type { BackendRow, LogTarget, TimeWindow } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';
import { DEFAULT_SLICE_ROWS, SHORT_COLUMNS_FIRST_SLICE, SliceSizer, type SliceSizing } from '../slices.js';
import type { StatementRunner } from '../statement-runner.js';
import {
  laneSliceQuery,
  mergedPageFits,
  readEveryRowInSlices,
  readInSlices,
  type MergedScan,
  type Lane,
  type LaneScan,
} from '../repositories/log-event-slices.js';

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
}

/** The streams one branch of the statement reads in its log group: the union of the sources' selectors. */
export interface GroupScope {
  name: string;
  all_streams: boolean;
  prefixes: string[];
  names: string[];
}

export function groupScopes(targets: LogTarget[]): GroupScope[] {
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
  ) => sql<LogQueryEventRow>`select e.timestamp, e.message, e.log_group, e.log_stream, e.event_id, e.level
      from jsonb_to_recordset(${JSON.stringify(groupScopes(targets))}::jsonb)
        as g(name text, all_streams boolean, prefixes text[], names text[])
      cross join lateral (
        select timestamp, message, log_group, log_stream, event_id, level from log_events
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
  return result.map(backendRow);
}

/**
 * The levels of every row `node` matches, when the filter says (a `level` leaf, alone, under `and`s, or in
 * `or`s of such); undefined when any level may match. (Not the complement under `not`: the column may hold a
 * level outside LEVELS, which `not` would match.)
 */
export function impliedLevels(node: FilterNode): Set<Level> | undefined {
  switch (node.kind) {
    case 'level':
      return new Set(node.levels);
    case 'and': {
      let levels: Set<Level> | undefined;
      for (const child of node.nodes) {
        const own = impliedLevels(child);
        if (own !== undefined) levels = levels === undefined ? own : new Set([...levels].filter((l) => own.has(l)));
      }
      return levels;
    }
    case 'or': {
      const levels = new Set<Level>();
      for (const child of node.nodes) {
        const own = impliedLevels(child);
        if (own === undefined) return undefined;
        own.forEach((l) => levels.add(l));
      }
      return levels;
    }
    default:
      return undefined;
  }
}

/**
 * A filter that implies at most this many levels reads one lane per group and level, each an ordered scan of
 * the group-level-time index: "show me the errors" then scans error rows only, as the one statement did (the
 * planner chose that index for a one-level filter). More levels: more lanes to merge than the scan saves.
 */
const MAX_LEVEL_LANES = 3;

/** The lanes of a unit's read: per group (its sources' streams), or per group and implied level. */
export function queryLanes(targets: LogTarget[], filter: FilterNode): Lane[] {
  const implied = impliedLevels(filter);
  const levels = implied !== undefined && implied.size <= MAX_LEVEL_LANES ? [...implied] : undefined;
  return groupScopes(targets).flatMap((g) => {
    const streams = { all: g.all_streams, prefixes: g.prefixes, names: g.names };
    if (levels === undefined) return [{ group: g.name, streams }];
    return levels.map((level) => ({ group: g.name, level, streams }));
  });
}

/**
 * A rough cost of testing one row against `filter` in SQL, in microseconds (PGlite, messages of a few hundred
 * bytes): only the first slice of a read is sized with it, the next ones by what the slices before them took. A
 * case-insensitive text leaf is a regex of folding classes in SQL whose evaluation grows with its length: the
 * widest filter the limits accept (30 such leaves of 1,024 characters among 241) took 15 ms a row, where a
 * filter of a few short leaves takes a few microseconds.
 */
export function rowCostMicros(filter: FilterNode): number {
  let micros = 5;
  const visit = (node: FilterNode): void => {
    if (!isLeaf(node)) {
      if (node.kind === 'not') visit(node.node);
      else if (node.kind === 'and' || node.kind === 'or') node.nodes.forEach(visit);
      return;
    }
    micros += 1;
    if (node.kind === 'text' && node.op !== 'regex' && node.caseSensitive !== true && hasCaseVariants(node.value))
      micros += node.value.length / 2;
    if (node.kind === 'field' && node.op === 'in') micros += node.value.length / 5;
  };
  visit(filter);
  return micros;
}

/** Whether `filter` reads no message and no JSON: levels and streams only, a few short columns a row. */
function readsShortColumnsOnly(filter: FilterNode): boolean {
  if (!isLeaf(filter)) {
    if (filter.kind === 'not') return readsShortColumnsOnly(filter.node);
    if (filter.kind === 'and' || filter.kind === 'or') return filter.nodes.every(readsShortColumnsOnly);
    return true;
  }
  return filter.kind === 'level' || filter.kind === 'stream';
}

/**
 * The first slice's budget. A filter on the message or its JSON may take long per row (messages are up to 256 KiB):
 * DEFAULT_SLICE_ROWS.initial, fewer for a filter whose rows cost more. One on levels and streams only (or none)
 * costs about the same for every row: the first slice may then hold a page of 1,000 rows in one statement.
 */
export function firstSliceRows(filter: FilterNode, sliceMs: number): number {
  const ceiling = readsShortColumnsOnly(filter) ? SHORT_COLUMNS_FIRST_SLICE : DEFAULT_SLICE_ROWS.initial;
  return Math.max(1, Math.min(ceiling, Math.floor((sliceMs * 1_000) / rowCostMicros(filter))));
}

const QUERY_COLUMNS = ['timestamp', 'message', 'log_group', 'log_stream', 'event_id', 'level'] as const;

/** A row of QUERY_COLUMNS read as an array (`RunOptions.arrays`), the columns in that order. */
type QueryEventTuple = [
  timestamp: number,
  message: string,
  logGroup: string,
  logStream: string,
  eventId: string,
  level: string,
];

/**
 * The rows `queryLogEvents` returns, the same and in the same order, read in slices (slices.ts,
 * log-event-slices.ts): no statement scans more than a slice's budget of rows, so none holds the database much
 * longer than `sizing.sliceMs`, and `signal` is checked between them. An empty `lanes` list (a filter no level
 * satisfies) reads nothing.
 */
export async function queryLogEventsSliced(
  db: Executor,
  run: StatementRunner,
  request: LogQueryEventsRequest & { signal: AbortSignal },
  bounds: SqlBounds,
  sizing: SliceSizing,
  /** Filled with the number of the filter's predicates left out to fit one statement (then rows are a superset). */
  report?: { relaxed: number },
): Promise<BackendRow[]> {
  const { targets, window, filter, limit, signal } = request;
  const first = targets[0]!;
  const lanes = queryLanes(targets, filter);
  if (keepsEveryRow(lanes, filter)) {
    const merged = readEveryRow(run, request, lanes, sizing, bounds);
    if (merged !== undefined) return merged;
  }
  const scan = (keep: RawBuilder<boolean>): LaneScan => ({
    accountId: first.account.id,
    region: first.region,
    lanes,
    window,
    order: 'newest',
    keep,
    columns: QUERY_COLUMNS,
  });
  // The filter is compiled once, within what the largest slice statement leaves of the bounds.
  const frame = laneSliceQuery({
    ...scan(sql<boolean>`true`),
    after: { ts: 0, id: '' },
    budgets: lanes.map(() => 1),
    limit,
  });
  const overhead = sqlSize(frame);
  const { where, relaxed } = compileBoundedSqlFilter(filter, {
    maxParams: bounds.maxParams - overhead.params,
    maxBytes: bounds.maxBytes - overhead.bytes,
  });
  if (report !== undefined) report.relaxed = relaxed;
  const rows = await readInSlices<LogQueryEventRow>(
    (query) => run(query.compile(db), signal),
    scan(where),
    { limit },
    new SliceSizer({ ...sizing, initialRows: sizing.initialRows ?? firstSliceRows(filter, sizing.sliceMs) }),
    signal,
  );
  return rows.map(backendRow);
}

/**
 * Whether every row the lanes scan is kept: every stream of each group, and no filter or a level leaf the lanes are
 * on. Such a read is merged keyset pages (`everyRowPage`), with none of the frontier bookkeeping a filter needs.
 */
export function keepsEveryRow(lanes: readonly Lane[], filter: FilterNode): boolean {
  const allStreams = lanes.every((l) => l.streams.all);
  const onLevels = filter.kind === 'level' && lanes.every((l) => l.level !== undefined);
  return allStreams && (filter.kind === 'all' || onLevels);
}

/**
 * `queryLogEventsSliced` for lanes whose every row is returned (`keepsEveryRow`): merged keyset pages
 * (log-event-slices.ts, `readEveryRowInSlices`). Undefined when one page's statement would exceed `bounds`.
 */
function readEveryRow(
  run: StatementRunner,
  { targets, window, limit, signal }: LogQueryEventsRequest & { signal: AbortSignal },
  lanes: readonly Lane[],
  sizing: SliceSizing,
  bounds: SqlBounds,
): Promise<BackendRow[]> | undefined {
  const scan = everyRowScan(targets, lanes, window);
  if (!mergedPageFits(scan, bounds)) return undefined;
  const sizer = new SliceSizer({ ...sizing, initialRows: sizing.initialRows ?? SHORT_COLUMNS_FIRST_SLICE });
  // Rows as arrays: the every-row read is the one that returns whole pages of 10,000 rows, and an array a row is
  // what the drivers build fastest (no keyed properties) and a PGlite worker posts cheapest (no property names).
  return readEveryRowInSlices<QueryEventTuple>(
    (query) => run(query, signal, { arrays: true }),
    scan,
    { limit, keyOf: (r) => ({ ts: Number(r[0]), id: r[4] }) },
    sizer,
    signal,
  ).then((rows) => rows.map(tupleRow));
}

/** The scan of a log query's lanes whose every row is kept, newest first. */
export function everyRowScan(targets: LogTarget[], lanes: readonly Lane[], window: TimeWindow): MergedScan {
  const first = targets[0]!;
  return { accountId: first.account.id, region: first.region, lanes, window, order: 'newest', columns: QUERY_COLUMNS };
}

function backendRow(r: LogQueryEventRow): BackendRow {
  return {
    timestamp: Number(r.timestamp),
    message: r.message,
    logGroup: r.log_group,
    logStream: r.log_stream,
    eventId: r.event_id,
    level: r.level as Level,
  };
}

function tupleRow(r: QueryEventTuple): BackendRow {
  return {
    timestamp: Number(r[0]),
    message: r[1],
    logGroup: r[2],
    logStream: r[3],
    eventId: r[4],
    level: r[5] as Level,
  };
}
