import { sql, type RawBuilder } from 'kysely';
import type { StreamSelector } from '../../core/log-query/types.js';
import type { Db, Executor } from '../db.js';
import type { SliceSizer } from '../slices.js';
import { cursorIn, readInSlices, type LaneStreams } from './log-event-slices.js';

/** The rows one log stream reads: groups of one account and region, and which of their streams. */
export interface StreamScope {
  accountId: string;
  region: string;
  logGroups: readonly string[];
  streams: StreamSelector;
}

/**
 * A tail position in `(xid, seq)` keys (`LocalCursor` in providers/local/log-stream-source.ts): a row is
 * pending for it iff `(xid, seq) > (x, s)` or `xip` holds `(xid, a)` with `seq > a`. xid8 as decimal text.
 */
export interface TailPosition {
  x: string;
  s: number;
  xip: readonly (readonly [xid: string, after: number])[];
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
  const e = entryArrays(p.xip);
  return sql<boolean>`(xid, seq) <= (${p.x}::text::xid8, ${p.s}::bigint)
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
  const rows = await readInSlices<StreamEventRow>(
    async (query) => (await query.execute(db)).rows,
    {
      accountId: scope.accountId,
      region: scope.region,
      lanes: [...new Set(scope.logGroups)].map((group) => ({ group, streams })),
      window,
      order: 'oldest',
      keep: ceiling === undefined ? sql<boolean>`true` : notPendingFor(ceiling),
      columns: HISTORY_COLUMNS,
    },
    { after, limit },
    sizer,
    signal,
  );
  return rows.map(numbers);
}

/** The snapshot the executor's statement (or REPEATABLE READ transaction) reads with. */
export async function currentSnapshot(db: Executor): Promise<Snapshot> {
  const r = await sql<{ xmax: string; xip: string[] | null }>`select pg_snapshot_xmax(s)::text as xmax,
      array(select pg_snapshot_xip(s)::text) as xip from pg_current_snapshot() as s`.execute(db);
  const row = r.rows[0]!;
  return { xmax: row.xmax, xip: [...(row.xip ?? [])] };
}

/** The rows pending for any of several tail positions: keys above `low`, and the entries' rows below it. */
export interface PendingRows {
  low: readonly [xid: string, seq: number];
  /** `(t, a)`: rows of transaction t with seq above a, at or below `low`. */
  extra: Iterable<readonly [xid: string, after: number]>;
}

/**
 * In one REPEATABLE READ transaction (so the snapshot and the rows share it; hence a `Db`, not a
 * transaction): the snapshot, then the rows of the scope visible in it that `pending` holds, in `(xid, seq)`
 * order, at most `limit`. The scan is the `(xid, seq)` index from `low`: a tail reads little above it.
 */
export async function readPendingRows(
  db: Db,
  scope: StreamScope,
  pending: PendingRows,
  limit: number,
): Promise<{ snapshot: Snapshot; rows: TailEventRow[] }> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // The first statement fixes the transaction's snapshot: the rows below are read with the same one.
      const snapshot = await currentSnapshot(trx);
      const where = sql`cloud_account_id = ${scope.accountId} and region = ${scope.region}
        and log_group = any(${[...scope.logGroups]}::text[]) and ${streamFilter(scope.streams)}`;
      const [lx, ls] = pending.low;
      const e = entryArrays(pending.extra);
      const result = await sql<TailEventRow>`select xo::text as xid, ${COLUMNS} from (
          (select xid as xo, ${COLUMNS} from log_events
            where ${where} and (xid, seq) > (${lx}::text::xid8, ${ls}::bigint))
          ${
            e.empty
              ? sql``
              : sql`union all
          (select xid, ${COLUMNS} from log_events join unnest(${e.ts}, ${e.as}) as p(t, a)
              on log_events.xid = p.t and log_events.seq > p.a
            where ${where} and (xid, seq) <= (${lx}::text::xid8, ${ls}::bigint))`
          }
        ) as u order by xo, seq limit ${limit}`.execute(trx);
      return { snapshot, rows: result.rows.map(numbers) };
    });
}

/** bigint columns are numbers on node-postgres (db.ts) and PGlite alike; this makes it sure for both. */
function numbers<R extends StreamEventRow>(r: R): R {
  return { ...r, seq: Number(r.seq), timestamp: Number(r.timestamp), ingestion_time: Number(r.ingestion_time) };
}
