import { numberCopies } from '../../../core/tail-window.js';
import type { StreamEvent, TailStep } from '../../log-stream/port.js';
import type { PageReader, ScanTarget } from './client.js';
import type { AwsCursor } from './cursor.js';
import { byEventKey } from './events.js';

/** Delivered ids a cursor keeps at most (beyond, its floor moves up and the oldest are forgotten). */
const MAX_SEEN = 5_000;

/** What one shared tail read found (or a replica's window gave: `windowBatch`). */
export interface TailBatch {
  from: number;
  to: number;
  /** Every event with a timestamp below this was read (to + 1, unless a group had more pages than a read may take). */
  coveredTo: number;
  truncated: boolean;
  /** Deduplicated, oldest first by (timestamp, eventId). */
  events: StreamEvent[];
  byId: Pick<Map<string, StreamEvent>, 'get'>;
  /** A window's batch: the newest bus entry it includes. */
  seq?: string;
}

/** A batch with nothing in it, covering nothing from `from` on. */
export const emptyBatch = (from: number, to = from): TailBatch => ({
  from,
  to,
  coveredTo: from,
  truncated: false,
  events: [],
  byId: new Map(),
});

/**
 * One sweep per scan target from the oldest cursor to `to`, at most `maxPages` pages each, shared by every
 * subscriber of the query.
 */
export async function readTail(
  readPage: PageReader,
  targets: ScanTarget[],
  cursors: AwsCursor[],
  to: number,
  maxPages: number,
  signal: AbortSignal,
): Promise<TailBatch> {
  const from = Math.max(0, Math.min(...cursors.map((c) => c.ts)));
  if (cursors.length === 0 || from > to) return emptyBatch(from, to);
  const results = await Promise.all(
    targets.map(async (target) => {
      const events: StreamEvent[] = [];
      let token: string | undefined;
      for (let pages = 0; pages < maxPages; pages++) {
        const page = await readPage(target, { startTime: from, endTime: to }, token, signal);
        events.push(...page.events);
        token = page.nextToken;
        if (token === undefined) return { events, truncated: false };
      }
      return { events, truncated: true };
    }),
  );
  let coveredTo = to + 1;
  let truncated = false;
  const byId = new Map<string, StreamEvent>();
  // Tail events are known by content (`hash.k`, see core/tail-window.ts), as Live Tail's are: the two kinds
  // de-duplicate against each other. The AWS eventId stays on the event, for cursors of the release before.
  const inRange = results.flatMap((r) => r.events.filter((e) => e.timestamp >= from && e.timestamp <= to));
  const unique = new Map<string, StreamEvent>();
  for (const e of inRange) unique.set(e.eventId, e);
  for (const e of numberCopies(
    [...unique.values()].map((e) => ({ ...e, logGroup: e.logGroup ?? '', upstreamId: e.eventId })),
  )) {
    byId.set(e.eventId, e);
    byId.set(e.upstreamId, e);
  }
  for (const r of results) {
    if (r.truncated) {
      truncated = true;
      // Pages come oldest first: that target may still hold more of its newest millisecond, nothing before it.
      let newest = from;
      for (const e of r.events) newest = Math.max(newest, e.timestamp);
      coveredTo = Math.min(coveredTo, newest);
    }
  }
  const events = [...new Set(byId.values())].sort(byEventKey);
  return { from, to, coveredTo, truncated, events, byId };
}

/**
 * The events of a read past `cursor`, at most `limit` of them. Stopping early, the cursor returned has every
 * undelivered event ahead of it: `ts` at or below the first one's timestamp, the delivered ones from `ts` on in
 * `seen`, and that first event in `hold` (so `compact` keeps it ahead too); the rest comes from calling again.
 */
export function advanceCursor(
  cursor: AwsCursor,
  b: TailBatch,
  startMs: number,
  limit: number,
  lookbackMs: number,
): TailStep<AwsCursor> & { more: boolean } {
  // A cursor the read did not cover (cannot happen through TailHub): leave it for the next read.
  if (cursor.ts < b.from) return { events: [], cursor, more: false };
  const seen = new Map<string, number>();
  for (const [ts, id] of cursor.seen) {
    const e = b.byId.get(id);
    // The read covered [cursor.ts, coveredTo): an id it did not find there is gone, unless it lies beyond (a
    // window that has not yet published what an earlier upstream read delivered).
    if (e !== undefined) seen.set(id, e.timestamp);
    else if (b.truncated || ts >= b.coveredTo) seen.set(id, ts);
  }
  const upTo = cursor.upTo;
  const behind = (e: StreamEvent) =>
    e.timestamp < cursor.ts || (upTo !== undefined && e.timestamp === cursor.ts && e.eventId <= upTo);
  const max = Math.max(1, limit);
  const events: StreamEvent[] = [];
  let next: StreamEvent | undefined;
  for (const e of b.events) {
    if (behind(e) || e.timestamp >= b.coveredTo || seen.has(e.eventId)) continue;
    // Delivered under its AWS eventId (a cursor of the release before): known from now on by its content id.
    if (e.upstreamId !== undefined && seen.has(e.upstreamId)) {
      seen.delete(e.upstreamId);
      seen.set(e.eventId, e.timestamp);
      continue;
    }
    if (events.length >= max) {
      next = e;
      break;
    }
    seen.set(e.eventId, e.timestamp);
    if (e.timestamp >= startMs) events.push(e);
  }
  let floor = Math.max(cursor.ts, b.coveredTo - lookbackMs);
  // A backlog bigger than a read's pages within one lookback: move on (late events there are given up).
  if (b.truncated && floor === cursor.ts && b.coveredTo > cursor.ts) floor = b.coveredTo;
  // Stopped at `limit`: the first undelivered event stays ahead.
  if (next !== undefined) floor = Math.min(floor, next.timestamp);
  let kept = [...seen].filter(([, ts]) => ts >= floor).map(([id, ts]): [number, string] => [ts, id]);
  kept.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
  if (kept.length > MAX_SEEN) {
    floor = kept[kept.length - MAX_SEEN]![0];
    if (next !== undefined) floor = Math.min(floor, next.timestamp);
    kept = kept.filter(([ts]) => ts >= floor);
  }
  const out: AwsCursor = { ts: floor, seen: kept };
  if (upTo !== undefined && floor === cursor.ts) out.upTo = upTo;
  if (next !== undefined) out.hold = [next.timestamp, next.eventId];
  if (b.seq !== undefined) {
    out.busSeq = b.seq;
    out.coveredTo = b.coveredTo;
  }
  return { events, cursor: out, more: next !== undefined };
}
