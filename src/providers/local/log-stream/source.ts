import type { Db } from '../../../store/db.js';
import {
  currentSnapshot,
  readHistorySliced,
  readTailLanes,
  type Snapshot,
  type StreamEventRow,
  type StreamScope,
  type TailEventRow,
  type TailLane,
  type TailLaneRow,
} from '../../../store/log-stream/events.js';
import { SHORT_COLUMNS_FIRST_SLICE, SliceSizer, shareBudget, type SliceSizing } from '../../../store/slices.js';
import type {
  HistoryCursor,
  KeyBatch,
  KeyRead,
  StreamEvent,
  StreamQuery,
  StreamSource,
  TailStep,
  TogetherRead,
} from '../../log-stream/port.js';

/**
 * Tail position in the local event table (docs/decisions.md, "Log stream"). Every row has a key
 * `(xid, seq)`: `xid` is the id of the transaction that wrote it (migration 003; all rows of a transaction
 * become visible together when it commits) and `seq` its own number. `seq` alone cannot be a position:
 * it is taken at insert, but the row appears at commit, so a long transaction (a fixture load) commits
 * rows below positions a tail has already passed.
 *
 * A cursor `{xid: x, seq: s, inProgress: xip}` names the rows still *pending* for its subscriber:
 *
 *     pending(k) ⇔ k > (x, s)  ∨  ∃ (t, a) ∈ xip: k.xid = t ∧ k.seq > a       (keys ordered by xid, then seq)
 *
 * and keeps the invariant (I): every row that is visible or may still become visible, and was not sent to
 * the subscriber (nor belongs to its history), is pending; no sent row is pending.
 *
 * PostgreSQL facts it rests on. A snapshot S = `pg_current_snapshot()` has `xmax` (every transaction id ≥
 * it is invisible in S: not yet started, or started after the last completion S knows of) and `xip` (the
 * transactions below `xmax` still in progress). Every other transaction below `xmax` has ended in S: if it
 * committed, all its rows are visible in S and in every later snapshot; if it aborted, its rows never become
 * visible. Later snapshots never see less (xmax does not decrease; an ended transaction stays ended).
 * `pg_current_xact_id()` and `pg_snapshot_xip` both give top-level ids (rows written in a subtransaction
 * carry the top-level id), and xid8 does not wrap around. `seq` ≥ 1.
 *
 * - `tailStart`: `(x, s) = (S.xmax, 0)`, `xip = S.xip` — pending is exactly what S does not show. History reads the
 *   rows that are not pending for it (what S shows), the tail all the others: (I) holds.
 * - `read`: in one REPEATABLE READ transaction (so S and the rows share one snapshot), S, then the rows
 *   visible in S that are pending for any subscriber (the union of their cursors), in key order, scanning at
 *   most N rows of the index. It holds every visible pending row with a key up to L, the last key scanned (when
 *   the scan stopped at N), or all of them — then let L = (S.xmax, 0), above every visible key. The keys of one
 *   account are read together (`readTogether`): one S for all, the keys with the same lowest (x, s) sharing one
 *   scan (a *lane*) of the union of their pending sets and scopes, which each key then narrows to its own
 *   scope in process. A lane's rows are a superset of what the key's own read would return below the lane's L,
 *   and the same snapshot, so every step below holds for each key with its lane's L.
 * - `advance`: walks the read in key order, taking the rows pending for this cursor (a row the filter pattern
 *   or `startMs` leaves out is taken without being sent), and stops before the (limit+1)-th event. Let B be the
 *   key of the last row taken when it stopped early, else L. Every row visible in S, pending, with key ≤ B has
 *   been taken. So the rows still pending are exactly
 *
 *       P' = P ∩ ({k > B} ∪ {xid ≥ S.xmax} ∪ {xid ∈ S.xip}) = P ∩ ({k > B} ∪ {xid ∈ S.xip})
 *
 *   (B ≤ (S.xmax, 0), so {xid ≥ S.xmax} ⊆ {k > B}), which as a cursor is:
 *     `(x, s)' = max((x, s), B)`;
 *     each entry `(t, a)` kept as is when t > B.xid, as `(t, max(a, B.seq))` when t = B.xid, dropped when
 *     t < B.xid (everything of it up to B was visible and taken; what is invisible comes next);
 *     for each t ∈ S.xip with any pending row, `(t, a)` with the smallest such a (0 when t > x, s when t = x,
 *     an entry's own a) — all of P on that transaction, which may still commit;
 *     entries for one t merged to the smallest a; entries (x, s)' already covers dropped.
 *   P' loses nothing pending and holds nothing taken: (I) holds again. Each read's rows are pending for some
 *   subscriber, which takes them, so cursors move on even when a read is cut at N.
 * - `compact`: the cursor as is (`LocalWireCursor`); when its entries do not fit an SSE id (hundreds of
 *   transactions in progress at once), the superset `(x, s) = min((x, s), every entry's (t, a))`, no entries: it
 *   holds every pending row (nothing lost) and may hold rows already sent between that key and the cursor
 *   (repeated on a resume).
 *
 * xid8 values are carried as decimal strings (they may exceed 2^53) and compared as such.
 */
export interface LocalCursor {
  /** With `seq`, the key `(x, s)`: every row with a key above it is pending. xid8 as decimal text. */
  xid: string;
  seq: number;
  /**
   * `xip`: `[xid, a]`, the rows of transaction `xid` with seq above `a` are pending too (a = 0: all of them).
   * Sorted by xid.
   */
  inProgress: [xid: string, after: number][];
}

/**
 * A `LocalCursor` as an SSE id carries it, in this field order: `x` xid, `s` seq, `i` the entries (`t` for
 * `[t, 0]`, `t:a` for `[t, a]`; absent when there are none). The ids of earlier releases hold it: the codec
 * keeps it byte for byte.
 */
export interface LocalWireCursor {
  x: string;
  s: number;
  i?: string[];
}

type Key = [xid: string, seq: number];

/** Rows one tail statement scans at most (its lanes together), whatever the slice sizer would allow. */
const READ_LIMIT = 10_000;
/** Accounts whose tail slice sizes are remembered (least recently read dropped first). */
const MAX_SIZERS = 1_000;
/** DB_SLICE_MS's default, for a source built without one. */
const DEFAULT_SLICE_MS = 50;
/**
 * JSON bytes of a compact cursor at most: a history id holds it next to an event id (≤ 128 characters), and
 * the whole SSE id (base64url of the JSON) stays under the 4,096 characters `decodeEventId` accepts.
 */
const COMPACT_BYTES = 1_500;
/** Entries `restore` accepts at most. */
const MAX_RESTORED_ENTRIES = 1_000;
const XID_TEXT = /^(0|[1-9][0-9]{0,19})$/;
const MAX_XID = 2n ** 64n - 1n;

const isXid = (v: unknown): v is string => typeof v === 'string' && XID_TEXT.test(v) && BigInt(v) <= MAX_XID;

/** Canonical decimal text compares by length, then by characters. */
function cmpXid(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
function cmpKey(a: Key, b: Key): number {
  return cmpXid(a[0], b[0]) || a[1] - b[1];
}

/** The cursor for `(x, s)` and entries: sorted, one per transaction, none that `(x, s)` already covers. */
function normalized(xid: string, seq: number, entries: Map<string, number>): LocalCursor {
  const inProgress: [string, number][] = [];
  for (const [t, a] of entries) {
    const k = cmpXid(t, xid);
    if (k < 0 || (k === 0 && a < seq)) inProgress.push([t, a]);
  }
  inProgress.sort((p, q) => cmpXid(p[0], q[0]));
  return { xid, seq, inProgress };
}

/** The smallest `a` such that every row of transaction `t` with seq above it is pending; undefined: none is. */
function pendingAfter(c: LocalCursor, t: string): number | undefined {
  const k = cmpXid(t, c.xid);
  let a = k > 0 ? 0 : k === 0 ? c.seq : undefined;
  for (const [u, b] of c.inProgress) if (u === t) a = a === undefined ? b : Math.min(a, b);
  return a;
}

/** The cursor after every row visible in the read's snapshot, pending and with a key up to `bound`, was taken. */
function shrink(c: LocalCursor, bound: Key, inProgress: string[]): LocalCursor {
  const [x, s] = cmpKey([c.xid, c.seq], bound) >= 0 ? [c.xid, c.seq] : bound;
  const entries = new Map<string, number>();
  const add = (t: string, a: number) => {
    const old = entries.get(t);
    entries.set(t, old === undefined ? a : Math.min(old, a));
  };
  for (const [t, a] of c.inProgress) {
    const k = cmpXid(t, bound[0]);
    if (k > 0) add(t, a);
    else if (k === 0) add(t, Math.max(a, bound[1]));
  }
  for (const t of inProgress) {
    const a = pendingAfter(c, t);
    if (a !== undefined) add(t, a);
  }
  return normalized(x, s, entries);
}

/** The wire form of a cursor (see `LocalWireCursor`). */
function toWire(c: LocalCursor): LocalWireCursor {
  return c.inProgress.length === 0
    ? { x: c.xid, s: c.seq }
    : { x: c.xid, s: c.seq, i: c.inProgress.map(([t, a]) => (a === 0 ? t : `${t}:${a}`)) };
}

/** The cursor of a wire value; undefined when it is not one. */
function fromWire(value: unknown): LocalCursor | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { x, s, i } = value as Partial<Record<keyof LocalWireCursor, unknown>>;
  if (!isXid(x) || typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0) return undefined;
  if (i !== undefined && (!Array.isArray(i) || i.length > MAX_RESTORED_ENTRIES)) return undefined;
  const entries = new Map<string, number>();
  for (const item of (i ?? []) as unknown[]) {
    if (typeof item !== 'string') return undefined;
    const [t, a = '0', ...rest] = item.split(':');
    if (rest.length > 0 || !isXid(t) || !/^(0|[1-9][0-9]{0,15})$/.test(a) || !Number.isSafeInteger(Number(a)))
      return undefined;
    entries.set(t, Math.min(entries.get(t) ?? Number(a), Number(a)));
  }
  return normalized(x, s, entries);
}

/** The snapshot with its in-progress transactions in xid order. */
const sortedSnapshot = (s: Snapshot): Snapshot => ({ xmax: s.xmax, xip: [...s.xip].sort(cmpXid) });

type Row = TailEventRow;

const toEvent = (r: StreamEventRow): StreamEvent => ({
  eventId: r.event_id,
  logStreamName: r.log_stream,
  message: r.message,
  timestamp: r.timestamp,
  ingestionTime: r.ingestion_time,
  level: r.level,
});

/** What one tail read gives a key (`read`, `readTogether`). */
export interface LocalReadBatch {
  /** The rows read that the filter pattern keeps, in key order. */
  rows: Row[];
  snapshot: Snapshot;
  /** When the read hit its limit: the last key scanned (rows above it were not read). */
  last?: Key;
}

/** The union of the pending sets of `cursors`: keys above the lowest (x, s), and the entries below it. */
function pendingUnion(cursors: readonly LocalCursor[]): { low: Key; extra: Map<string, number> } | undefined {
  let low: Key | undefined;
  for (const c of cursors) if (low === undefined || cmpKey([c.xid, c.seq], low) < 0) low = [c.xid, c.seq];
  if (low === undefined) return undefined;
  const extra = new Map<string, number>();
  for (const c of cursors) {
    for (const [t, a] of c.inProgress) {
      if (cmpKey([t, a], low) >= 0) continue; // every row of it above a is above `low`
      extra.set(t, Math.min(extra.get(t) ?? a, a));
    }
  }
  return { low, extra };
}

/** Whether a row of an account's read lies in a key's scope: the tests the statement made, in process. */
function inScope(q: StreamQuery): (r: TailLaneRow) => boolean {
  const groups = new Set(q.logGroups);
  const streams = q.streams;
  const names = new Set(streams.kind === 'names' ? streams.names : []);
  const stream =
    streams.kind === 'all'
      ? () => true
      : streams.kind === 'prefix'
        ? (name: string) => name.startsWith(streams.prefix)
        : (name: string) => names.has(name);
  return (r) => r.region === q.region && groups.has(r.log_group) && stream(r.log_stream);
}

const scopeOf = (q: StreamQuery): StreamScope => ({
  accountId: q.account.id,
  region: q.region,
  logGroups: q.logGroups,
  streams: q.streams,
});

export interface LocalStreamSourceOptions {
  /** Rows one tail statement scans (and so returns) at most. */
  readLimit?: number;
  /** How history batches and tail reads are cut into slices (`sliceMs`: DB_SLICE_MS). */
  slices?: Partial<SliceSizing>;
}

export class LocalStreamSource implements StreamSource<LocalCursor, LocalReadBatch> {
  private readonly readLimit: number;
  private readonly slices: SliceSizing;
  /** Per account, how many rows a tail statement may scan to take about DB_SLICE_MS (learnt read by read). */
  private readonly tailSizers = new Map<string, SliceSizer>();
  readonly tailing = { kind: 'polled' } as const;

  constructor(
    private readonly db: Db,
    options: LocalStreamSourceOptions = {},
  ) {
    this.readLimit = Math.max(1, options.readLimit ?? READ_LIMIT);
    this.slices = { ...options.slices, sliceMs: options.slices?.sliceMs ?? DEFAULT_SLICE_MS };
  }

  async tailStart(_query?: StreamQuery, _signal?: AbortSignal): Promise<LocalCursor> {
    const snapshot = sortedSnapshot(await currentSnapshot(this.db));
    return { xid: snapshot.xmax, seq: 0, inProgress: snapshot.xip.map((t): [string, number] => [t, 0]) };
  }

  async *history(
    q: StreamQuery,
    window: { startMs: number; endMs: number },
    after: HistoryCursor | undefined,
    switchPoint: LocalCursor | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]> {
    const scope = scopeOf(q);
    // One sizer for the whole history: what it learns of one batch's slices sizes the next batch's. Its rows are
    // tested on streams and transaction ids only (the filter pattern runs here, on the rows read).
    const sizer = new SliceSizer({ initialRows: SHORT_COLUMNS_FIRST_SLICE, ...this.slices });
    let cursor = after;
    for (;;) {
      if (signal.aborted) return;
      // History is what was there when the stream began: no row pending for the switch point (the ceiling).
      // Ordered by (timestamp, event_id), compared by the database alone, so the cursor resumes exactly.
      // Read in slices of DB_SLICE_MS: a stop between two of them ends the history here.
      let rows: StreamEventRow[];
      try {
        rows = await readHistorySliced(
          this.db,
          {
            scope,
            window,
            after: cursor,
            ceiling: switchPoint,
            limit: batchSize,
          },
          sizer,
          signal,
        );
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
      if (rows.length === 0) return;
      const last = rows[rows.length - 1]!;
      cursor = { ts: last.timestamp, id: last.event_id };
      yield (await q.filter.select(rows, (r) => r.message, signal)).map(toEvent);
      if (rows.length < batchSize) return;
    }
  }

  /** One read for every subscriber of the query: the rows pending for any of their cursors. */
  async read(q: StreamQuery, cursors: LocalCursor[], signal?: AbortSignal): Promise<LocalReadBatch> {
    const [result] = (await this.readTogether([{ query: q, cursors, signal }], signal)).batches;
    if (result !== undefined && 'error' in result) throw result.error;
    return result!.batch;
  }

  /**
   * One read for every subscriber of several keys of one account: one REPEATABLE READ transaction, one rows
   * statement. Keys whose pending sets start at the same (x, s) share a lane (after a complete read, every key
   * read with it does); a key at another position (a tail resumed from an old id, one that just started) gets a
   * lane of its own, with its share of the statement's budget, so a long backlog neither makes the other keys
   * wait behind it nor lets the statement run long. The budget is sized per account to about DB_SLICE_MS; `more`
   * says a lane stopped at its budget. Each key takes its scope's rows of its lane and applies its filter pattern
   * to them (`select`, once per key).
   */
  async readTogether(keys: KeyRead<LocalCursor>[], signal?: AbortSignal): Promise<TogetherRead<LocalReadBatch>> {
    if (keys.length === 0) return { batches: [], more: false };
    const accountId = keys[0]!.query.account.id;
    if (keys.some((k) => k.query.account.id !== accountId)) throw new Error('readTogether: keys of several accounts');
    const pending = keys.map((k) => pendingUnion(k.cursors));
    const lanes: TailLane[] = [];
    const laneOf = new Map<string, number>();
    const keyLane: (number | undefined)[] = [];
    for (const [i, p] of pending.entries()) {
      if (p === undefined) {
        keyLane.push(undefined);
        continue;
      }
      const id = `${p.low[0]}:${p.low[1]}`;
      let n = laneOf.get(id);
      if (n === undefined) {
        n = lanes.length;
        laneOf.set(id, n);
        lanes.push({ low: p.low, extra: new Map(), budget: 1, scopes: [] });
      }
      const lane = lanes[n]!;
      const extra = lane.extra as Map<string, number>;
      for (const [t, a] of p.extra) extra.set(t, Math.min(extra.get(t) ?? a, a));
      (lane.scopes as StreamScope[]).push(scopeOf(keys[i]!.query));
      keyLane.push(n);
    }
    const sizer = this.tailSizer(accountId);
    const budgets = shareBudget(
      sizer.budget,
      lanes.map(() => 1),
    );
    for (const [n, lane] of lanes.entries()) lane.budget = budgets[n]!;
    // The snapshot and the rows share one REPEATABLE READ transaction (see LocalCursor, `read`).
    const read = await readTailLanes(this.db, accountId, lanes);
    sizer.record({ budget: budgets.reduce((sum, b) => sum + b, 0), scanned: read.scanned, ms: read.ms });
    const snapshot = sortedSnapshot(read.snapshot);
    const batches = await Promise.all(
      keys.map(async (k, i): Promise<KeyBatch<LocalReadBatch>> => {
        const n = keyLane[i];
        const lane = n === undefined ? undefined : read.lanes[n];
        const p = pending[i];
        let rows: Row[] = [];
        if (lane !== undefined && p !== undefined) {
          const scoped = inScope(k.query);
          // The lane may hold rows pending only for another key's entries: this key's own pending set.
          const mine = (r: Row) =>
            cmpKey([r.xid, r.seq], p.low) > 0 || r.seq > (p.extra.get(r.xid) ?? Number.POSITIVE_INFINITY);
          rows = lane.rows.filter((r) => scoped(r) && mine(r));
        }
        try {
          const kept = await k.query.filter.select(rows, (r) => r.message, k.signal ?? signal);
          const batch: LocalReadBatch = { rows: kept, snapshot };
          if (lane?.last !== undefined) batch.last = lane.last;
          return { batch };
        } catch (error) {
          return { error };
        }
      }),
    );
    return { batches, more: read.lanes.some((l) => l.last !== undefined) };
  }

  /** The account's tail sizer; its rows are tested on keys and placing columns only, as a history's are. */
  private tailSizer(accountId: string): SliceSizer {
    let sizer = this.tailSizers.get(accountId);
    if (sizer === undefined) {
      sizer = new SliceSizer({
        initialRows: SHORT_COLUMNS_FIRST_SLICE,
        ...this.slices,
        maxRows: Math.min(this.readLimit, this.slices.maxRows ?? this.readLimit),
      });
      if (this.tailSizers.size >= MAX_SIZERS) this.tailSizers.delete(this.tailSizers.keys().next().value!);
    } else this.tailSizers.delete(accountId);
    this.tailSizers.set(accountId, sizer);
    return sizer;
  }

  advance(
    cursor: LocalCursor,
    batch: LocalReadBatch,
    startMs: number,
    limit = Number.POSITIVE_INFINITY,
  ): TailStep<LocalCursor> & { more: boolean } {
    const { rows, snapshot, last } = batch;
    const max = Math.max(1, limit);
    const entries = new Map(cursor.inProgress);
    const floor: Key = [cursor.xid, cursor.seq];
    const pending = (r: Row) =>
      cmpKey([r.xid, r.seq], floor) > 0 || r.seq > (entries.get(r.xid) ?? Number.POSITIVE_INFINITY);
    // Without entries, nothing at or below (x, s) is pending: start past it.
    let lo = 0;
    if (entries.size === 0) {
      for (let hi = rows.length; lo < hi; ) {
        const mid = (lo + hi) >>> 1;
        if (cmpKey([rows[mid]!.xid, rows[mid]!.seq], floor) <= 0) lo = mid + 1;
        else hi = mid;
      }
    }
    const events: StreamEvent[] = [];
    let taken: Key | undefined;
    let stopped = false;
    for (let i = lo; i < rows.length; i++) {
      const r = rows[i]!;
      if (!pending(r)) continue;
      if (events.length >= max) {
        stopped = true;
        break;
      }
      taken = [r.xid, r.seq];
      if (Number(r.timestamp) >= startMs) events.push(toEvent(r));
    }
    // Everything visible and pending up to `bound` was taken (see LocalCursor).
    const bound: Key = stopped ? taken! : (last ?? [snapshot.xmax, 0]);
    return { events, cursor: shrink(cursor, bound, snapshot.xip), more: stopped };
  }

  compact(cursor: LocalCursor): LocalWireCursor {
    const full = toWire(cursor);
    if (Buffer.byteLength(JSON.stringify(full)) <= COMPACT_BYTES) return full;
    // Too many transactions in progress for an SSE id: a superset of what is pending (may repeat, never loses).
    let low: Key = [cursor.xid, cursor.seq];
    for (const [t, a] of cursor.inProgress) if (cmpKey([t, a], low) < 0) low = [t, a];
    return toWire({ xid: low[0], seq: low[1], inProgress: [] });
  }

  restore(value: unknown): LocalCursor | undefined {
    return fromWire(value);
  }
}
