import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type { SqlBounds } from '../../core/filter-tree/index.js';
import { rowsWanted, runSlices, shareBudget, type SliceSizer } from '../slices.js';

/**
 * Slices of a read of `log_events` (see slices.ts): each statement scans a bounded number of rows of the
 * read's *lanes* — one index range each: a log group, or a log group and one level — past a key, keeps those
 * the read's condition accepts, and says where the next slice starts. The rows of the slices, put end to end,
 * are exactly those one statement walking the whole range would return, in the same order.
 *
 * Several lanes in one slice: each scans up to its own share of the budget, in `(timestamp, event_id)` order.
 * A lane that scanned its whole share stopped at its last row; the rows of every lane are known up to the
 * *frontier*, the last row of the lane that got least far. The slice returns the kept rows up to the frontier
 * (rows of other lanes past it are scanned again by the next slice), and the next slice starts past it. When no
 * lane scanned its whole share, every lane reached the end of the window: the read is over. The frontier is
 * found in SQL, so every comparison of event ids is the database's (its collation), as the indexes' are.
 */

/** A position in `(timestamp, event_id)` order. */
export interface ScanKey {
  ts: number;
  id: string;
}

/** The streams of a lane's group that the read covers. */
export interface LaneStreams {
  all: boolean;
  prefixes: string[];
  names: string[];
}

/** One index range: a group (the group-and-time index) or a group and a level (the group-level-time index). */
export interface Lane {
  group: string;
  level?: string;
  streams: LaneStreams;
}

export interface LaneScan {
  accountId: string;
  region: string;
  /** Either every lane has a level or none has. */
  lanes: readonly Lane[];
  /** Inclusive, epoch ms. */
  window: { startMs: number; endMs: number };
  /** `newest`: timestamp and event id descending; `oldest`: ascending. */
  order: 'newest' | 'oldest';
  /** A condition on the row (columns of `log_events`, which it may name): the rows the read keeps. */
  keep: RawBuilder<boolean>;
  /** The columns of `log_events` each row comes back with. */
  columns: readonly string[];
}

/**
 * `after` as a cursor for a scan of `window` in `order`: undefined when it lies before the window (every row of
 * the window is past it), `'past-window'` when it lies beyond the window's far end (no row is). PGlite 0.4
 * (PostgreSQL 17.5) returned rows outside `timestamp >= start` when the same index scan also had
 * `(timestamp, event_id) > (t, id)` with t < start (test/store/sliced-reads.test.ts found it; PostgreSQL 15 did
 * not): a cursor before the window is never given to the database.
 */
export function cursorIn(
  after: ScanKey | undefined,
  window: { startMs: number; endMs: number },
  order: 'newest' | 'oldest',
): ScanKey | 'past-window' | undefined {
  if (after === undefined) return undefined;
  const [near, far] =
    order === 'oldest'
      ? [after.ts < window.startMs, after.ts > window.endMs]
      : [after.ts > window.endMs, after.ts < window.startMs];
  if (near) return undefined;
  return far ? 'past-window' : after;
}

/** Equal time buckets from `startMs`: a kept row counts in bucket ⌊(timestamp − startMs) / widthMs⌋. */
export interface SliceBuckets {
  startMs: number;
  widthMs: number;
}

/** What an aggregate slice returns per bucket and level of its kept rows (levels as the column holds them). */
export interface SliceCount {
  bucket: number;
  level: string;
  n: number;
}

/**
 * One slice: `scan`, past `after`, each lane scanning at most its budget, at most `limit` rows back. With
 * `aggregate`, the kept rows up to the frontier come back counted per bucket and level (`SliceCount`) instead.
 */
export interface LaneSlice extends LaneScan {
  after?: ScanKey | undefined;
  budgets: readonly number[];
  limit: number;
  aggregate?: SliceBuckets;
}

/** What the statement returns besides the rows: one more row, with `slice_mark` set and the rest null. */
interface MarkerColumns {
  slice_mark: boolean;
  slice_pos: number | null;
  f_ts: number | null;
  f_id: string | null;
  scanned: number | null;
  reached: [lane: number, rows: number][] | null;
  ms: number | null;
}

export interface SliceResult<R> {
  /** The kept rows up to the frontier, in the scan's order (at most `limit`). */
  rows: R[];
  /** Where the next slice starts (exclusive); undefined when every lane reached the end of the window. */
  frontier?: ScanKey;
  /**
   * Rows the lanes scanned: exact for a lane that scanned its whole share, at least the position of its last kept
   * row for one that reached the end of the window.
   */
  scanned: number;
  /**
   * Per lane, how far up to the frontier its scan is known to have got (the position of its last row there that
   * came back): about the rows it moved the read by.
   */
  reached: number[];
  /** How long the database spent on the statement (parse and plan included), by its own clock. */
  ms: number;
}

/** Columns every returned row of a scan carries (the order's, and the primary key). */
const KEY_COLUMNS = new Set(['seq', 'timestamp', 'event_id']);

const LANE_RECORD = sql`g(lane_no int, lane_group text, lane_level text, lane_lim int, lane_all boolean,
  lane_prefixes text[], lane_names text[])`;

/** The statement of one slice (see the module's comment). */
export function laneSliceQuery<R>(s: LaneSlice): RawBuilder<R & MarkerColumns> {
  const byLevel = s.lanes.some((l) => l.level !== undefined);
  if (byLevel && s.lanes.some((l) => l.level === undefined)) throw new Error('laneSliceQuery: mixed lanes');
  const dir = sql.raw(s.order === 'newest' ? 'desc' : 'asc');
  const past = sql.raw(s.order === 'newest' ? '<' : '>');
  const upTo = sql.raw(s.order === 'newest' ? '>=' : '<=');
  const order = sql`timestamp ${dir}, event_id ${dir}`;
  const cols = sql.join(s.columns.map((c) => sql.ref(c)));
  const nulls = sql.join(s.columns.map(() => sql`null`));
  const lanes = JSON.stringify(
    s.lanes.map((l, i) => ({
      lane_no: i,
      lane_group: l.group,
      lane_level: l.level ?? null,
      lane_lim: s.budgets[i]!,
      lane_all: l.streams.all,
      lane_prefixes: l.streams.prefixes,
      lane_names: l.streams.names,
    })),
  );
  // Of the rows scanned, the statement carries those kept and the last row of each lane that scanned its whole
  // share (its position says so); the other columns of kept rows only: a slice that keeps nothing copies no
  // message around. (Only positions: `lead()` to mark the last row of every lane cost half the scan again.)
  const scanned = [...new Set(['seq', 'timestamp', 'event_id', ...s.columns])];
  const carried = sql.join(
    scanned.map((c) =>
      KEY_COLUMNS.has(c) ? sql.ref(c) : sql`case when slice_kept then ${sql.ref(c)} end as ${sql.ref(c)}`,
    ),
  );
  const frontier = sql`(select f_ts from f)`;
  const upToFrontier = sql`(${frontier} is null or (timestamp, event_id) ${upTo} (${frontier}, (select f_id from f)))`;
  const kept =
    s.aggregate === undefined
      ? sql`select false as slice_mark, row_number() over (order by ${order}) as slice_pos, ${cols},
        null::bigint as f_ts, null::text as f_id, null::int as scanned, null::jsonb as reached, null::float8 as ms
      from c where slice_kept and ${upToFrontier} order by ${order} limit ${s.limit}`
      : // Within the window, the offset from its start is never negative: integer division rounds down.
        sql`select false as slice_mark, row_number() over () as slice_pos,
        ((timestamp - ${s.aggregate.startMs}::bigint) / ${s.aggregate.widthMs}::bigint)::int as bucket, level,
        count(*)::int as n,
        null::bigint as f_ts, null::text as f_id, null::int as scanned, null::jsonb as reached, null::float8 as ms
      from c where slice_kept and ${upToFrontier} group by 3, 4`;
  const markerNulls = s.aggregate === undefined ? nulls : sql`null, null, null`;
  return sql<R & MarkerColumns>`with c as materialized (
      select g.lane_no, g.lane_lim, e.* from jsonb_to_recordset(${lanes}::jsonb) as ${LANE_RECORD}
      cross join lateral (
        select ${carried}, slice_kept, slice_n from (
          select ${sql.join(scanned.map((c) => sql.ref(c)))},
            ((g.lane_all or log_stream = any(g.lane_names)
              or exists (select 1 from unnest(g.lane_prefixes) as p(prefix) where starts_with(log_stream, p.prefix)))
              and ${s.keep}) as slice_kept,
            row_number() over (order by ${order}) as slice_n
          from log_events
          where cloud_account_id = ${s.accountId} and region = ${s.region} and log_group = g.lane_group
            ${byLevel ? sql`and level = g.lane_level` : sql``}
            and timestamp >= ${s.window.startMs} and timestamp <= ${s.window.endMs}
            ${s.after === undefined ? sql`` : sql`and (timestamp, event_id) ${past} (${s.after.ts}, ${s.after.id})`}
          order by ${order} limit g.lane_lim
        ) as scanned
        where slice_kept or slice_n = g.lane_lim
      ) e
    ),
    f as (select timestamp as f_ts, event_id as f_id from c where slice_n = lane_lim order by ${order} limit 1)
    (${kept})
    union all
    (select true, null, ${markerNulls}, ${frontier}, (select f_id from f),
        (select coalesce(sum(n), 0) from (select max(slice_n) as n from c group by lane_no) as l)::int,
        (select coalesce(jsonb_agg(jsonb_build_array(lane_no, n)), '[]'::jsonb)
          from (select lane_no, max(slice_n) as n from c where ${upToFrontier} group by lane_no) as r),
        -- Since the statement's own (implicit) transaction began: parse and plan included (a 67 KB filter takes
        -- tens of milliseconds to plan), the time it waited for its turn not.
        (extract(epoch from clock_timestamp() - transaction_timestamp()) * 1000)::float8)`;
}

/** The rows of `laneSliceQuery`'s statement, parsed. `wallMs`: the statement's time as the caller saw it. */
export function sliceResult<R>(rows: (R & MarkerColumns)[], lanes: number, wallMs: number): SliceResult<R> {
  const marker = rows.find((r) => r.slice_mark);
  if (marker === undefined) throw new Error('a slice statement returned no marker row');
  const data = rows.filter((r) => !r.slice_mark).sort((a, b) => Number(a.slice_pos) - Number(b.slice_pos));
  const reached = new Array<number>(lanes).fill(0);
  for (const [lane, n] of marker.reached ?? []) reached[Number(lane)] = Number(n);
  const ms = Number(marker.ms);
  return {
    // The marker's columns stay on the rows (null): every caller maps a row to its own shape, and copying 10,000
    // rows to delete them cost more than the statement's parse (a profile of the 10,000-row query).
    rows: data as R[],
    ...(marker.f_ts === null ? {} : { frontier: { ts: Number(marker.f_ts), id: String(marker.f_id) } }),
    scanned: Number(marker.scanned ?? 0),
    reached,
    // The database's clock leaves out the time the statement waited for its turn; the caller's is the fallback.
    ms: Number.isFinite(ms) && ms >= 0 ? Math.min(ms, wallMs) : wallMs,
  };
}

/** What the one-lane statement returns besides a row's own columns. */
interface OneLaneColumns {
  slice_kept: boolean;
  slice_n: number;
  slice_ms: number;
}

/**
 * A slice of a scan of one lane: its next `budget` rows past `after` (an ordered index scan stopped by the limit),
 * of which those the lane's streams and `keep` accept, and the last one scanned when the scan used its whole budget
 * (it is where the next slice starts). No frontier to find among lanes: none of `laneSliceQuery`'s bookkeeping.
 */
export function oneLaneSliceQuery<R>(
  s: LaneScan,
  after: ScanKey | undefined,
  budget: number,
): RawBuilder<R & OneLaneColumns> {
  const lane = s.lanes[0]!;
  const dir = sql.raw(s.order === 'newest' ? 'desc' : 'asc');
  const past = sql.raw(s.order === 'newest' ? '<' : '>');
  const order = sql`timestamp ${dir}, event_id ${dir}`;
  const scanned = [...new Set(['timestamp', 'event_id', ...s.columns])];
  const streams = lane.streams.all
    ? sql<boolean>`true`
    : sql<boolean>`(log_stream = any(${lane.streams.names}::text[])
        or exists (select 1 from unnest(${lane.streams.prefixes}::text[]) as p(prefix) where starts_with(log_stream, p.prefix)))`;
  return sql<R & OneLaneColumns>`select ${sql.join(scanned.map((c) => sql.ref(c)))}, slice_kept, slice_n,
      (extract(epoch from clock_timestamp() - transaction_timestamp()) * 1000)::float8 as slice_ms
    from (
      select ${sql.join(scanned.map((c) => sql.ref(c)))}, (${streams} and ${s.keep}) as slice_kept,
        row_number() over (order by ${order}) as slice_n
      from log_events
      where cloud_account_id = ${s.accountId} and region = ${s.region} and log_group = ${lane.group}
        ${lane.level === undefined ? sql`` : sql`and level = ${lane.level}`}
        and timestamp >= ${s.window.startMs} and timestamp <= ${s.window.endMs}
        ${after === undefined ? sql`` : sql`and (timestamp, event_id) ${past} (${after.ts}, ${after.id})`}
      order by ${order} limit ${budget}
    ) as scanned
    where slice_kept or slice_n = ${budget}
    order by slice_n`;
}

/** The rows of `oneLaneSliceQuery`'s statement as a slice: at most `limit` kept rows. */
function oneLaneResult<R>(raw: (R & OneLaneColumns)[], budget: number, limit: number): SliceResult<R> {
  const rows: R[] = [];
  for (const r of raw) if (r.slice_kept && rows.length < limit) rows.push(r);
  const last = raw[raw.length - 1] as (R & OneLaneColumns & { timestamp: number; event_id: string }) | undefined;
  const scanned = last === undefined ? 0 : Number(last.slice_n);
  const ms = raw.reduce((m, r) => Math.max(m, Number(r.slice_ms)), 0);
  return {
    rows,
    // The whole budget scanned: the rows past the last one are for the next slice. Otherwise the window is done.
    ...(last !== undefined && scanned === budget
      ? { frontier: { ts: Number(last.timestamp), id: last.event_id } }
      : {}),
    scanned,
    reached: [scanned],
    ms,
  };
}

/** Runs one slice statement: the rows it returned. */
export type SliceExecutor = <R>(query: RawBuilder<R>) => Promise<R[]>;

/**
 * The first `limit` kept rows of `scan` past `after`, in the scan's order, read in slices sized by `sizer`.
 * `signal` is checked between slices.
 */
export async function readInSlices<R>(
  exec: SliceExecutor,
  scan: LaneScan,
  read: { after?: ScanKey | undefined; limit: number },
  sizer: SliceSizer,
  signal?: AbortSignal,
): Promise<R[]> {
  const lanes = scan.lanes.length;
  const rows: R[] = [];
  const start = cursorIn(read.after, scan.window, scan.order);
  if (lanes === 0 || read.limit <= 0 || start === 'past-window') return rows;
  // Every later cursor is a frontier: a row of the window.
  let after = start;
  // Lanes that moved the read in the last slice get the larger shares of the next (one lane may be dense in
  // time where the others are sparse); every lane gets one row at least.
  let weights = new Array<number>(lanes).fill(1);
  let scannedTotal = 0;
  await runSlices(sizer, signal, async (budget) => {
    const remaining = read.limit - rows.length;
    const budgets = shareBudget(Math.min(budget, rowsWanted(remaining, rows.length, scannedTotal, lanes)), weights);
    const started = performance.now();
    const slice =
      lanes === 1
        ? oneLaneResult<R>(await exec(oneLaneSliceQuery<R>(scan, after, budgets[0]!)), budgets[0]!, remaining)
        : sliceResult<R>(
            await exec(laneSliceQuery<R>({ ...scan, after, budgets, limit: remaining })),
            lanes,
            performance.now() - started,
          );
    for (const row of slice.rows) rows.push(row);
    scannedTotal += slice.scanned;
    weights = slice.reached.map((n) => n + 1);
    after = slice.frontier;
    return {
      done: rows.length >= read.limit || after === undefined,
      budget: budgets.reduce((s, b) => s + b, 0),
      scanned: slice.scanned,
      ms: slice.ms,
    };
  });
  return rows;
}

/**
 * The kept rows of `scan` (every one, in the window) counted per bucket and level, in slices sized by `sizer`:
 * each slice statement counts its rows up to its frontier, so no row is counted twice or missed. `signal` is
 * checked between slices.
 */
export async function countInSlices(
  exec: SliceExecutor,
  scan: LaneScan,
  buckets: SliceBuckets,
  sizer: SliceSizer,
  signal?: AbortSignal,
): Promise<SliceCount[]> {
  const lanes = scan.lanes.length;
  const counts = new Map<string, SliceCount>();
  if (lanes === 0) return [];
  let after: ScanKey | undefined;
  let weights = new Array<number>(lanes).fill(1);
  await runSlices(sizer, signal, async (budget) => {
    const budgets = shareBudget(budget, weights);
    const started = performance.now();
    const raw = await exec(laneSliceQuery<SliceCount>({ ...scan, after, budgets, limit: 0, aggregate: buckets }));
    const slice = sliceResult<SliceCount>(raw, lanes, performance.now() - started);
    for (const row of slice.rows) {
      const key = `${row.bucket} ${row.level}`;
      const seen = counts.get(key);
      if (seen === undefined) counts.set(key, { bucket: Number(row.bucket), level: row.level, n: Number(row.n) });
      else seen.n += Number(row.n);
    }
    weights = slice.reached.map((n) => n + 1);
    after = slice.frontier;
    return {
      done: after === undefined,
      budget: budgets.reduce((sum, b) => sum + b, 0),
      scanned: slice.scanned,
      ms: slice.ms,
    };
  });
  return [...counts.values()];
}

/** A scan whose every row is kept (every stream of each lane, no condition): merged keyset pages read it. */
export type MergedScan = Omit<LaneScan, 'keep' | 'lanes'> & { lanes: readonly Lane[] };

/**
 * The rows of `scan` past `after`, at most `limit`, in the scan's order: a keyset page of each lane (an ordered
 * index scan of the group-time or group-level-time index) merged by the database (a Merge Append under the limit:
 * it reads about `limit` rows in all, plus one a lane, and sorts nothing). The lanes share their parameters by
 * position, so a page over 300 lanes carries about 300 parameters. Each lane must cover every stream of its group.
 */
export function mergedPage<R>(scan: MergedScan, after: ScanKey | undefined, limit: number): CompiledQuery<R> {
  if (scan.lanes.some((l) => !l.streams.all)) throw new Error('mergedPage: a lane of some streams only');
  const dir = scan.order === 'newest' ? 'desc' : 'asc';
  const past = scan.order === 'newest' ? '<' : '>';
  const columns = scan.columns.join(', ');
  const order = `order by timestamp ${dir}, event_id ${dir}`;
  // $1 account, $2 region, $3..$4 the window, $5 the limit, $6..$7 the cursor; then a group or a level each.
  const parameters: unknown[] = [scan.accountId, scan.region, scan.window.startMs, scan.window.endMs, limit];
  if (after !== undefined) parameters.push(after.ts, after.id);
  const param = (value: string): string => {
    parameters.push(value);
    return `$${parameters.length}`;
  };
  const cursor = after === undefined ? '' : ` and (timestamp, event_id) ${past} ($6, $7)`;
  const branches = scan.lanes.map((lane) => {
    const level = lane.level === undefined ? '' : ` and level = ${param(lane.level)}`;
    return (
      `select ${columns} from log_events where cloud_account_id = $1 and region = $2 and log_group = ` +
      `${param(lane.group)}${level} and timestamp >= $3 and timestamp <= $4${cursor} ${order} limit $5`
    );
  });
  const text =
    branches.length === 1
      ? branches[0]!
      : `select ${columns} from ((${branches.join(') union all (')})) as lanes ${order} limit $5`;
  return CompiledQuery.raw(text, parameters) as CompiledQuery<R>;
}

/** Whether the widest page of `scan` stays within `bounds` (parameters and SQL text). */
export function mergedPageFits(scan: MergedScan, bounds: SqlBounds): boolean {
  const widest = mergedPage(scan, { ts: 0, id: '' }, 1);
  return widest.parameters.length <= bounds.maxParams && widest.sql.length <= bounds.maxBytes;
}

/**
 * `readInSlices` for a scan whose every row is kept: each slice is one merged page (`mergedPage`) of the sizer's
 * budget, timed by the caller's clock, with none of the frontier bookkeeping a condition needs; the last row of a
 * page is where the next starts. `keyOf` reads a row's position (rows as objects by default; a caller that runs
 * the pages with rows as arrays gives its own).
 */
export async function readEveryRowInSlices<R>(
  run: (query: CompiledQuery<R>) => Promise<R[]>,
  scan: MergedScan,
  read: { after?: ScanKey | undefined; limit: number; keyOf?: (row: R) => ScanKey },
  sizer: SliceSizer,
  signal?: AbortSignal,
): Promise<R[]> {
  const keyOf = read.keyOf ?? (objectKey as (row: R) => ScanKey);
  const rows: R[] = [];
  const start = cursorIn(read.after, scan.window, scan.order);
  if (scan.lanes.length === 0 || read.limit <= 0 || start === 'past-window') return rows;
  let after = start;
  await runSlices(sizer, signal, async (budget) => {
    const asked = Math.min(budget, read.limit - rows.length);
    const started = performance.now();
    const page = await run(mergedPage<R>(scan, after, asked));
    const ms = performance.now() - started;
    for (const row of page) rows.push(row);
    const last = page[page.length - 1];
    after = last === undefined ? after : keyOf(last);
    return { done: page.length < asked || rows.length >= read.limit, budget, scanned: page.length, ms };
  });
  return rows;
}

/** The position of a row that came back as an object with its `timestamp` and `event_id` columns. */
function objectKey(row: { timestamp: number | string; event_id: string }): ScanKey {
  return { ts: Number(row.timestamp), id: row.event_id };
}
