import type { TailWindow } from '../../../core/tail-window.js';
import type { LiveTail, Resolution } from '../../log-stream/port.js';
import type { AwsCursor } from './cursor.js';
import { emptyBatch, type TailBatch } from './tail-read.js';

/**
 * A tail batch from a replica's live window (see core/tail-window.ts): every event of the window from `from`
 * on, the window vouching for everything at or after its `complete` up to `coveredTo`.
 */
export function windowBatch(window: TailWindow, from: number): TailBatch {
  // Only what is published (stored on the bus): a resumed cursor is rebuilt from published entries alone.
  const to = window.published;
  if (!(to >= from) || window.appliedSeq === undefined) return emptyBatch(from);
  const events = window.since(from).filter((e) => e.seq !== undefined);
  return { from, to, coveredTo: to + 1, truncated: false, events, byId: window, seq: window.appliedSeq };
}

/** Rebuilds the delivered events of a cursor restored with a bus position, from a window that can vouch for them. */
export function resolveCursor(cursor: AwsCursor, window: TailWindow, warming: boolean): Resolution {
  if (!cursor.pending) return 'ready';
  const { busSeq, coveredTo } = cursor;
  const caughtUp = window.appliedSeq !== undefined && busSeq !== undefined && window.appliedSeq >= busSeq;
  // What the cursor was given is rebuilt from the published events the window still holds; whether the window
  // vouches for the rest (`complete`) decides later whether the cursor reads from it or upstream (after a gap).
  if (caughtUp && coveredTo !== undefined && window.heldFrom <= cursor.ts) {
    const given = new Map(cursor.seen.map(([ts, id]) => [id, ts]));
    for (const [ts, id] of window.delivered(cursor.ts, coveredTo, busSeq, cursor.hold)) given.set(id, ts);
    cursor.seen = [...given].map(([id, ts]): [number, string] => [ts, id]);
    cursor.seen.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
    cursor.pending = false;
    return 'ready';
  }
  if (warming) return 'wait';
  // The window cannot say (its entries are gone, or it does not reach back so far): the ids the SSE id carried.
  cursor.pending = false;
  delete cursor.busSeq;
  delete cursor.coveredTo;
  return 'fallback';
}

/** The aws tail as a replica's window serves it (`TailSharing` `live`). */
export const awsLiveTail: LiveTail<AwsCursor, TailBatch> = {
  kind: 'live',
  batch: windowBatch,
  floor: (cursor) => cursor.ts,
  resolve: resolveCursor,
};
