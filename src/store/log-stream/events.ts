import { sql, type RawBuilder } from 'kysely';
import type { StreamSelector } from '../../core/log-query/types.js';
import type { Db, Executor } from '../db.js';
import type { SliceSizer } from '../slices.js';
import { cursorIn, readEveryRowInSlices, readInSlices, type LaneStreams } from '../repositories/log-event-slices.js';

/** The rows one log stream reads: groups of one account and region, and which of their streams. */
export interface StreamScope {
  accountId: string;
  region: string;
  logGroups: readonly string[];
  streams: StreamSelector;
}

/**
 * A tail position in `(xid, seq)` keys (`LocalCursor` in providers/local/log-stream/source.ts is one): a row
 * `(t, a)` is pending for it iff `(t, a) > (xid, seq)` or `inProgress` holds `(t, b)` with `a > b`. xid8 as
 * decimal text.
 */
export interface TailPosition {
  xid: string;
  seq: number;
  inProgress: readonly (readonly [xid: string, after: number])[];
}

export interface StreamEventRow {
  seq: number;
  log_stream: string;
  message: string;
  timestamp: number;
  ingestion_time: number;
  event_id: string;
  level: string;
}

/** A row of a tail read, with its transaction's id (xid8 as decimal text). */
export interface TailEventRow extends StreamEventRow {
  xid: string;
}

/** A snapshot's `xmax` and in-progress transactions (xid8 as decimal text, in no particular order). */
export interface Snapshot {
  xmax: string;
  xip: string[];
}

const COLUMNS = sql`seq, log_stream, message, timestamp, ingestion_time, event_id, level`;

/** One SQL parameter per list (`= any($1::text[])`), not one per name. */
function streamFilter(streams: StreamSelector): RawBuilder<boolean> {
  switch (streams.kind) {
    case 'all':
      return sql<boolean>`true`;
    case 'prefix':
      return sql<boolean>`starts_with(log_stream, ${streams.prefix})`;
    case 'names':
      return streams.names.length === 0
        ? sql<boolean>`false`
        : sql<boolean>`log_stream = any(${streams.names}::text[])`;
  }
}

/** Entries as SQL arrays (xid8 through text: the values may exceed what a JS number holds). */
function entryArrays(entries: Iterable<readonly [string, number]>) {
  const ts: string[] = [];
  const as: number[] = [];
  for (const [t, a] of entries) {
    ts.push(t);
    as.push(a);
  }
  return { ts: sql`${ts}::text[]::xid8[]`, as: sql`${as}::bigint[]`, empty: ts.length === 0 };
}

/** The rows not pending for `p`: what the snapshot it was taken from showed. */
function notPendingFor(p: TailPosition): RawBuilder<boolean> {
  const e = entryArrays(p.inProgress);
  return sql<boolean>`(xid, seq) <= (${p.xid}::text::xid8, ${p.seq}::bigint)
    ${
      e.empty
        ? sql``
        : sql`and not exists (select 1 from unnest(${e.ts}, ${e.as}) as p(t, a)
      where log_events.xid = p.t and log_events.seq > p.a)`
    }`;
}

export interface HistoryBatchRequest {
  scope: StreamScope;
  /** Inclusive, epoch ms. */
  window: { startMs: number; endMs: number };
  /** Rows after this `(timestamp, event_id)` only. */
  after?: { ts: number; id: string } | undefined;
  /** Rows not pending for this position only (history ends where the tail starts). */
  ceiling?: TailPosition | undefined;
  limit: number;
}

/**
 * The first `limit` rows of the scope in `(timestamp, event_id)` order after `after`. Each group is read on
 * its own with `log_group = …`, so the scan is the group's (…, timestamp desc, event_id desc) index walked
 * backwards from the keyset (the row comparison is an index condition), stopping at `limit` rows. With
 * `log_group = any(…)` neither PostgreSQL 15 nor PGlite uses that index for the order: every batch read and
 * top-N sorted the rest of the window, so a replay was quadratic (50,000 events, a batch halfway: 31 ms on
 * PostgreSQL, 99 ms on PGlite, against 0.2 and 0.6–4 ms). Several groups: one such scan per group (LATERAL),
 * merged by the outer sort, which reads up to `limit` rows per group for `limit` out. The merge stays in SQL
 * so that every comparison of event ids is the database's (its collation), as the cursor's `>` is.
 */
export function historyBatchQuery(r: HistoryBatchRequest): RawBuilder<StreamEventRow> {
  const { scope, window, ceiling, limit } = r;
  const start = cursorIn(r.after, window, 'oldest');
  // Past the window: nothing is after it (`false`, not the cursor: see `cursorIn`).
  const after = start === 'past-window' ? undefined : start;
  const rows = (group: RawBuilder<string>) => sql<StreamEventRow>`select ${COLUMNS} from log_events
    where cloud_account_id = ${scope.accountId} and region = ${scope.region} and log_group = ${group}
      and ${streamFilter(scope.streams)}
      and timestamp >= ${window.startMs} and timestamp <= ${window.endMs}
      ${ceiling === undefined ? sql`` : sql`and ${notPendingFor(ceiling)}`}
      ${after === undefined ? sql`` : sql`and (timestamp, event_id) > (${after.ts}, ${after.id})`}
      ${start === 'past-window' ? sql`and false` : sql``}
    order by timestamp, event_id limit ${limit}`;
  const groups = [...new Set(scope.logGroups)];
  if (groups.length === 1) return rows(sql`${groups[0]}`);
  return sql<StreamEventRow>`select e.* from unnest(${groups}::text[]) as g(name)
    cross join lateral (${rows(sql`g.name`)}) as e
    order by e.timestamp, e.event_id limit ${limit}`;
}

/** See `historyBatchQuery`. */
export async function readHistoryBatch(db: Executor, r: HistoryBatchRequest): Promise<StreamEventRow[]> {
  if (r.scope.logGroups.length === 0) return [];
  const result = await historyBatchQuery(r).execute(db);
  return result.rows.map(numbers);
}

/** The stream selector as a lane's streams (log-event-slices.ts). */
function laneStreams(streams: StreamSelector): LaneStreams {
  switch (streams.kind) {
    case 'all':
      return { all: true, prefixes: [], names: [] };
    case 'prefix':
      return { all: false, prefixes: [streams.prefix], names: [] };
    case 'names':
      return { all: false, prefixes: [], names: [...streams.names] };
  }
}

const HISTORY_COLUMNS = ['seq', 'log_stream', 'message', 'timestamp', 'ingestion_time', 'event_id', 'level'] as const;

/**
 * The rows `readHistoryBatch` returns, the same and in the same order, read in slices (log-event-slices.ts):
 * each statement scans at most the sizer's budget of rows of the groups' (…, timestamp, event_id) index, and
 * the stream selector and the ceiling are tested on those rows only, so a selector or a ceiling that leaves out
 * most rows does not make one statement walk the whole window. `signal` is checked between slices.
 */
export async function readHistorySliced(
  db: Executor,
  r: HistoryBatchRequest,
  sizer: SliceSizer,
  signal?: AbortSignal,
): Promise<StreamEventRow[]> {
  const { scope, window, after, ceiling, limit } = r;
  const streams = laneStreams(scope.streams);
  const lanes = [...new Set(scope.logGroups)].map((group) => ({ group, streams }));
  if (ceiling === undefined && streams.all) {
    // Every row of every lane is kept (no tail, so no switch point to hold rows back): merged keyset pages, each
    // lane an ordered scan of its group's index (at most 100 groups: ~110 parameters a page).
    const scan = { accountId: scope.accountId, region: scope.region, lanes, window, order: 'oldest' as const };
    const rows = await readEveryRowInSlices<StreamEventRow>(
      async (query) => (await db.executeQuery(query)).rows,
      { ...scan, columns: HISTORY_COLUMNS },
      { after, limit },
      sizer,
      signal,
    );
    return rows.map(historyRow);
  }
  const rows = await readInSlices<StreamEventRow>(
    async (query) => (await query.execute(db)).rows,
    {
      accountId: scope.accountId,
      region: scope.region,
      lanes,
      window,
      order: 'oldest',
      keep: ceiling === undefined ? sql<boolean>`true` : notPendingFor(ceiling),
      columns: HISTORY_COLUMNS,
    },
    { after, limit },
    sizer,
    signal,
  );
  return rows.map(historyRow);
}

/** A history row as `readHistoryBatch` returns it: its own columns (a slice's rows carry the marker's too). */
function historyRow(r: StreamEventRow): StreamEventRow {
  return {
    seq: Number(r.seq),
    log_stream: r.log_stream,
    message: r.message,
    timestamp: Number(r.timestamp),
    ingestion_time: Number(r.ingestion_time),
    event_id: r.event_id,
    level: r.level,
  };
}

/** The snapshot the executor's statement (or REPEATABLE READ transaction) reads with. */
export async function currentSnapshot(db: Executor): Promise<Snapshot> {
  const r = await sql<{ xmax: string; xip: string[] | null }>`select pg_snapshot_xmax(s)::text as xmax,
      array(select pg_snapshot_xip(s)::text) as xip from pg_current_snapshot() as s`.execute(db);
  const row = r.rows[0]!;
  return { xmax: row.xmax, xip: [...(row.xip ?? [])] };
}

/**
 * One lane of a tail read: the rows pending for tail positions that share `low` (`LocalCursor` in
 * providers/local/log-stream-source.ts: keys above `low`, and the entries' rows at or below it), in the scopes of
 * the keys those positions belong to.
 */
export interface TailLane {
  low: readonly [xid: string, seq: number];
  /** `(t, a)`: rows of transaction t with seq above a, at or below `low`. */
  extra: Iterable<readonly [xid: string, after: number]>;
  /** Rows the lane's scan may pass at most, of any account: what bounds the statement. */
  budget: number;
  /** Where the lane's rows may lie (its keys' groups and streams); every scope is of the read's account. */
  scopes: readonly Omit<StreamScope, 'accountId'>[];
}

/** A row of a tail lane, with where it lies (the caller tells its keys' rows apart in process). */
export interface TailLaneRow extends TailEventRow {
  region: string;
  log_group: string;
}

export interface TailLaneResult {
  /** The rows read, in `(xid, seq)` order: visible in the snapshot, pending, in one of the lane's scopes. */
  rows: TailLaneRow[];
  /**
   * When the lane scanned its whole budget: the last key it scanned (of whatever account). Every row visible in
   * the snapshot, pending for the lane and in its scopes, with a key up to it, is in `rows`; the rows above it
   * were not read. Undefined: every such row was read.
   */
  last?: [xid: string, seq: number];
}

export interface TailLanesResult {
  snapshot: Snapshot;
  lanes: TailLaneResult[];
  /** Rows the lanes' scans passed, together. */
  scanned: number;
  /** How long the database spent on the rows statement, by its own clock (the wait for its turn not counted). */
  ms: number;
}

/** A lane's budget as its statement takes it: a whole number of rows, one at least (else it could not move). */
const laneLimit = (budget: number) => Math.max(1, Math.floor(budget));

const SCANNED = sql`seq, xid, cloud_account_id, region, log_group, log_stream`;

interface LaneStatementRow {
  lane_no: number;
  n: number;
  kept: boolean | null;
  xid: string | null;
  seq: number | null;
  region: string | null;
  log_group: string | null;
  log_stream: string | null;
  message: string | null;
  timestamp: number | null;
  ingestion_time: number | null;
  event_id: string | null;
  level: string | null;
  ms: number | null;
}

/** Whether row `u` lies in one of the scopes (of the read's account). */
function inScopes(accountId: string, scopes: TailLane['scopes']): RawBuilder<boolean> {
  const one = (scope: TailLane['scopes'][number]) => {
    const streams = scope.streams;
    const stream =
      streams.kind === 'all'
        ? sql`true`
        : streams.kind === 'prefix'
          ? sql`starts_with(u.log_stream, ${streams.prefix})`
          : streams.names.length === 0
            ? sql`false`
            : sql`u.log_stream = any(${streams.names}::text[])`;
    return sql`(u.region = ${scope.region} and u.log_group = any(${[...new Set(scope.logGroups)]}::text[])
      and ${stream})`;
  };
  if (scopes.length === 0) return sql<boolean>`false`;
  return sql<boolean>`(u.cloud_account_id = ${accountId} and (${sql.join(scopes.map(one), sql` or `)}))`;
}

/** One lane's part of the statement: its scan, numbered in key order, each row marked kept or not. */
function laneScan(accountId: string, lane: TailLane, no: number): RawBuilder<unknown> {
  const lim = laneLimit(lane.budget);
  const [x, s] = lane.low;
  const e = entryArrays(lane.extra);
  const above = sql`select ${SCANNED} from log_events
    where (xid, seq) > (${x}::text::xid8, ${s}::bigint) order by xid, seq limit ${lim}`;
  // The entries' rows at or below `low` come first in key order: merged with the rows above, `lim` at most.
  const walk = e.empty
    ? above
    : sql`(${above}) union all
      (select p.* from unnest(${e.ts}, ${e.as}) as q(t, a) cross join lateral (
        select ${SCANNED} from log_events
          where xid = q.t and seq > q.a and (xid, seq) <= (${x}::text::xid8, ${s}::bigint)
          order by xid, seq limit ${lim}) as p)
      order by xid, seq limit ${lim}`;
  return sql`select ${no}::int as lane_no, ${lim}::int as lane_lim, u.seq, u.xid, u.n,
      ${inScopes(accountId, lane.scopes)} as kept
    from (select v.*, row_number() over (order by v.xid, v.seq) as n from (${walk}) as v) as u`;
}

/**
 * The rows statement of `readTailLanes`. Each lane walks the `(xid, seq)` index from its `low` (and each entry's
 * transaction below it), merged in key order, at most `budget` rows whatever their account: so a statement holds
 * the database for a bounded time even when other tenants wrote much since the lane's position, and a lane far
 * behind (a tail resumed from an old id) takes its own budget, not the other lanes' turn. Only keys and the
 * columns that place a row are carried through the walk; the other columns are read for the rows kept, by
 * primary key, so rows of other accounts or scopes cost no message copies. The last row is a marker (`lane_no`
 * -1) with the rows scanned in `n` and the statement's time in `ms`. Lanes and scopes are written out in the
 * statement (not passed as a recordset): in the usual case, one lane and no entries, it plans and runs like a
 * single scan.
 */
export function tailLanesQuery(accountId: string, lanes: readonly TailLane[]): RawBuilder<LaneStatementRow> {
  const scans = sql.join(
    lanes.map((lane, no) => sql`(${laneScan(accountId, lane, no)})`),
    sql` union all `,
  );
  return sql<LaneStatementRow>`with scanned as materialized (${scans})
    (select s.lane_no, s.n, s.kept, s.xid::text as xid, s.seq, e.region, e.log_group, e.log_stream, e.message,
        e.timestamp, e.ingestion_time, e.event_id, e.level, null::float8 as ms
      from scanned s
      -- By primary key, row by row (the limit keeps the planner from hashing the whole table for a few rows).
      left join lateral (select * from log_events where s.kept and log_events.seq = s.seq limit 1) as e on true
      where s.kept or s.n = s.lane_lim)
    union all
    (select -1, (select count(*) from scanned), null, null, null, null, null, null, null, null, null, null, null,
      -- Since the statement began: the time it waited for its turn is not counted.
      (extract(epoch from clock_timestamp() - statement_timestamp()) * 1000)::float8)`;
}

/**
 * A tail read of several lanes of one account at once: in one REPEATABLE READ transaction (so the snapshot and
 * the rows share it; hence a `Db`, not a transaction), the snapshot, then one statement that reads every lane
 * (`tailLanesQuery`): for each, the rows of its scopes visible in the snapshot that are pending for it, in
 * `(xid, seq)` order, its scan bounded by its budget.
 */
export async function readTailLanes(db: Db, accountId: string, lanes: readonly TailLane[]): Promise<TailLanesResult> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // The first statement fixes the transaction's snapshot: the rows below are read with the same one.
      const snapshot = await currentSnapshot(trx);
      if (lanes.length === 0) return { snapshot, lanes: [], scanned: 0, ms: 0 };
      const started = performance.now();
      const result = await tailLanesQuery(accountId, lanes).execute(trx);
      const wallMs = performance.now() - started;
      const out: TailLaneResult[] = lanes.map(() => ({ rows: [] }));
      let ms = wallMs;
      let scanned = 0;
      const ordered = [...result.rows].sort((a, b) => a.lane_no - b.lane_no || Number(a.n) - Number(b.n));
      for (const r of ordered) {
        if (r.lane_no < 0) {
          scanned = Number(r.n);
          const own = Number(r.ms);
          if (Number.isFinite(own) && own >= 0) ms = Math.min(own, wallMs);
          continue;
        }
        const lane = out[r.lane_no]!;
        if (r.kept === true) {
          lane.rows.push(
            numbers({
              xid: r.xid!,
              seq: r.seq!,
              region: r.region!,
              log_group: r.log_group!,
              log_stream: r.log_stream!,
              message: r.message!,
              timestamp: r.timestamp!,
              ingestion_time: r.ingestion_time!,
              event_id: r.event_id!,
              level: r.level!,
            }),
          );
        }
        // The lane's scan stopped at its budget: its last row bounds what it read.
        if (Number(r.n) === laneLimit(lanes[r.lane_no]!.budget)) lane.last = [r.xid!, Number(r.seq)];
      }
      return { snapshot, lanes: out, scanned, ms };
    });
}

/** bigint columns are numbers on node-postgres (db.ts) and PGlite alike; this makes it sure for both. */
function numbers<R extends StreamEventRow>(r: R): R {
  // In place: the rows are the driver's, read once, and a history batch has hundreds of them.
  r.seq = Number(r.seq);
  r.timestamp = Number(r.timestamp);
  r.ingestion_time = Number(r.ingestion_time);
  return r;
}
