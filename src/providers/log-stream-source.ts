import type { CloudAccount, StreamSelector } from '../core/log-query/types.js';
import type { TailWindow } from '../core/tail-window.js';

/** One event as a stream source yields it. */
export interface StreamEvent {
  eventId: string;
  logStreamName: string;
  message: string;
  /** epoch ms */
  timestamp: number;
  /** epoch ms */
  ingestionTime: number;
  level: string;
  /** The log group, where a source knows it (aws tail events: part of what identifies them). */
  logGroup?: string;
  /** The upstream's own id where the source replaced it (aws tail: the FilterLogEvents eventId). */
  upstreamId?: string;
}

/** What one stream reads: an account's groups, a stream filter and a filter pattern. */
export interface StreamQuery {
  account: CloudAccount;
  region: string;
  logGroups: string[];
  streams: Exclude<StreamSelector, { kind: 'all' }> | { kind: 'all' };
  /** The filter pattern as given ('' = everything). */
  pattern: string;
  /** Applies the filter pattern to messages read locally (aws applies it upstream). */
  filter: MessageFilter;
}

/**
 * Which messages a stream's filter pattern keeps. The work may run off the event loop, on a CPU budget: past it,
 * `select` rejects with the error `logs:filter:too-costly`.
 */
export interface MessageFilter {
  /** The items whose message the pattern keeps, in their order. */
  select<T>(items: readonly T[], message: (item: T) => string, signal?: AbortSignal): Promise<T[]>;
}

/** A filter evaluated in the calling thread with a plain predicate (small inputs, tests). */
export function predicateFilter(keep: (message: string) => boolean): MessageFilter {
  return { select: async (items, message) => items.filter((item) => keep(message(item))) };
}

/** Where a history read stands: the last event delivered, in (timestamp, eventId) order. */
export interface HistoryCursor {
  ts: number;
  id: string;
}

/** One key of a read of several together: its query, its subscribers' cursors, and its own stop signal. */
export interface KeyRead<C> {
  query: StreamQuery;
  cursors: C[];
  signal?: AbortSignal;
}

/** One key's outcome of a read of several: its batch, or the failure that is its alone (its filter's). */
export type KeyBatch = { batch: unknown } | { error: unknown };

/**
 * A log store that can replay history oldest first and be polled for new
 * events. Tail cursors are the source's own (JSON-serializable) positions.
 */
export interface StreamSource<C = unknown> {
  /** Fixes the switch point before history is read: history stops at it, the tail starts after it. */
  tailStart(query: StreamQuery, signal: AbortSignal): Promise<C>;
  /** Events in [startMs, endMs] after `after`, oldest first, in batches, none past the switch point. */
  history(
    query: StreamQuery,
    window: { startMs: number; endMs: number },
    after: HistoryCursor | undefined,
    switchPoint: C | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]>;
  /** One upstream read covering every given cursor (shared by all subscribers of a query). */
  read(query: StreamQuery, cursors: C[], signal: AbortSignal): Promise<unknown>;
  /**
   * Sources that can read the keys of one account together (local): one read for all of them, each key's batch
   * what `read` would give for it, in the order given. `more`: some key's read stopped at its bound before it
   * reached the end (read again soon, not at the next interval).
   */
  readTogether?(keys: KeyRead<C>[], signal: AbortSignal): Promise<{ batches: KeyBatch[]; more: boolean }>;
  /**
   * The events of a read that come after `cursor`, and the cursor after them. A source stops at `limit`
   * events and says `more`: the rest of the batch then comes from calling again with the returned cursor, so
   * each SSE message carries the cursor after exactly its own events (every undelivered one still ahead of it).
   */
  advance(
    cursor: C,
    batch: unknown,
    startMs: number,
    limit?: number,
  ): { events: StreamEvent[]; cursor: C; more?: boolean };
  /** A resumable form of a cursor for the SSE id (may drop detail). */
  compact(cursor: C): unknown;
  /** Rebuilds a cursor from `compact`'s output; undefined when it is not one. */
  restore(value: unknown): C | undefined;
  /**
   * Sources whose live part is one upstream per key in the cluster (aws): the batch a replica's window gives
   * cursors from `from` on, and a cursor's floor (a cursor below the window's `complete` reads upstream).
   */
  live?: {
    batch(window: TailWindow, from: number): unknown;
    floor(cursor: C): number;
    /**
     * A cursor restored from an SSE id may name a bus position instead of listing what it was given: rebuilt from
     * the window once it can vouch (`ready`), not yet (`wait`, while the window warms up), or never (`fallback`:
     * the cursor goes on with what its id listed).
     */
    resolve(cursor: C, window: TailWindow, warming: boolean): 'ready' | 'wait' | 'fallback';
  };
}
