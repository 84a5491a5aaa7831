import type { HistoryCursor, StreamEvent } from '../../log-stream/port.js';
import type { PageReader, ScanTarget } from './client.js';
import { byEventKey } from './events.js';

/** What a history read covers: events from `startTime` to `last` (epoch ms, both included), after `after`. */
export interface HistoryRange {
  startTime: number;
  last: number;
  after: HistoryCursor | undefined;
}

/** Where one scan target's pages stand in a merge. */
interface TargetState {
  target: ScanTarget;
  token?: string;
  done: boolean;
  /** Timestamp of the newest event read: this target may still hold more of that millisecond, none before. */
  frontier: number;
  pending: StreamEvent[];
  inflight?: Promise<void>;
  error?: unknown;
}

/**
 * History of several scan targets, merged oldest first by (timestamp, eventId) in batches of `batchSize`. Each
 * target's pages come oldest first, so an event below every unfinished target's frontier is final; targets are
 * read ahead in parallel, each as far as the merge needs. A failure of any target fails the history (unless the
 * stream stopped meanwhile); stopping it stops every read.
 */
export async function* mergeHistory(
  readPage: PageReader,
  targets: ScanTarget[],
  { startTime, last, after }: HistoryRange,
  batchSize: number,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent[]> {
  if (startTime > last) return;
  const range = { startTime, ...(last >= Number.MAX_SAFE_INTEGER ? {} : { endTime: last }) };
  const size = Math.max(1, batchSize);

  const states: TargetState[] = targets.map((target) => ({ target, done: false, frontier: -Infinity, pending: [] }));
  const abort = new AbortController();
  const onAbort = () => abort.abort(signal.reason);
  if (signal.aborted) return;
  signal.addEventListener('abort', onAbort, { once: true });
  /** Nothing at or below this (timestamp, eventId) is emitted again. */
  let emitted: HistoryCursor | undefined = after;
  /** Every event below this timestamp was emitted (or is behind `after`). */
  let threshold = -Infinity;

  const fetch = (s: TargetState) => {
    s.inflight = readPage(s.target, range, s.token, abort.signal).then(
      (page) => {
        s.inflight = undefined;
        for (const e of page.events) {
          if (e.timestamp < startTime || e.timestamp > last || e.timestamp < threshold) continue;
          s.pending.push(e);
          s.frontier = Math.max(s.frontier, e.timestamp);
        }
        s.token = page.nextToken;
        if (page.nextToken === undefined) s.done = true;
      },
      (error: unknown) => {
        s.inflight = undefined;
        s.error = error;
      },
    );
  };

  try {
    for (;;) {
      const failed = states.find((s) => s.error !== undefined);
      if (failed !== undefined) {
        if (signal.aborted) return;
        throw failed.error;
      }
      // Events below every unfinished target's frontier are final: no target can still return one before them.
      const safe = Math.min(...states.map((s) => (s.done ? Infinity : s.frontier)));
      for (const s of states) {
        if (!s.done && s.inflight === undefined && (s.pending.length === 0 || s.frontier <= safe)) fetch(s);
      }
      const ready: StreamEvent[] = [];
      for (const s of states) {
        const keep: StreamEvent[] = [];
        for (const e of s.pending) (e.timestamp < safe ? ready : keep).push(e);
        s.pending = keep;
      }
      if (ready.length > 0) {
        threshold = safe;
        ready.sort(byEventKey);
        const out: StreamEvent[] = [];
        for (const e of ready) {
          if (
            emitted !== undefined &&
            (e.timestamp < emitted.ts || (e.timestamp === emitted.ts && e.eventId <= emitted.id))
          )
            continue;
          out.push(e);
          emitted = { ts: e.timestamp, id: e.eventId };
        }
        for (let i = 0; i < out.length; i += size) {
          if (signal.aborted) return;
          yield out.slice(i, i + size);
        }
        continue;
      }
      const inflight = states.flatMap((s) => (s.inflight === undefined ? [] : [s.inflight]));
      if (inflight.length === 0) return; // every target done and drained
      await Promise.race(inflight);
      if (signal.aborted) return;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    abort.abort();
  }
}
