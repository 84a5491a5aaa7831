import type { CloudAccount, StreamSelector } from '../../core/log-query/types.js';
import type { TailWindow } from '../../core/tail-window.js';

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
export type KeyBatch<B> = { batch: B } | { error: unknown };

/** A read of several keys together: each key's outcome in the order given, and whether to read again soon. */
export interface TogetherRead<B> {
  batches: KeyBatch<B>[];
  /** Some key's read stopped at its bound before it reached the end (read again soon, not at the next interval). */
  more: boolean;
}

/** One step of `advance`: the events past the cursor, the cursor after them, and whether the batch holds more. */
export interface TailStep<C> {
  events: StreamEvent[];
  cursor: C;
  more?: boolean;
}

/** What `LiveTail.resolve` found for a restored cursor (see there). */
export type Resolution = 'ready' | 'wait' | 'fallback';

/**
 * How a source's tail is shared by the subscribers of one key.
 *
 * - `polled`: the hub reads the source itself — per key (`read`), or per account when the source can read keys
 *   together (`readTogether`).
 * - `live`: the source's live part is one upstream per key in the cluster (aws), which feeds a window on every
 *   replica (core/tail-window.ts); the hub serves cursors from the window and reads the source only for cursors
 *   older than it (or when the replica follows no keys cluster-wide: then it polls as `polled` does).
 */
export type TailSharing<C, B> = { kind: 'polled' } | LiveTail<C, B>;

/** A source's window-fed live tail (`TailSharing` `live`). */
export interface LiveTail<C, B> {
  kind: 'live';
  /** The batch a replica's window gives cursors from `from` on. */
  batch(window: TailWindow, from: number): B;
  /** A cursor's floor: a cursor below the window's `complete` reads upstream. */
  floor(cursor: C): number;
  /**
   * A cursor restored from an SSE id may name a bus position instead of listing what it was given: rebuilt from
   * the window once it can vouch (`ready`), not yet (`wait`, while the window warms up), or never (`fallback`:
   * the cursor goes on with what its id listed).
   */
  resolve(cursor: C, window: TailWindow, warming: boolean): Resolution;
}

/**
 * A log store that can replay history oldest first and be polled for new events. `C` is the source's tail
 * cursor (its own position; `compact` makes the JSON that resumes it), `B` what one tail read gives (`read`),
 * which only `advance` looks into.
 */
export interface StreamSource<C, B> {
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
  read(query: StreamQuery, cursors: C[], signal: AbortSignal): Promise<B>;
  /**
   * Sources that can read the keys of one account together (local): one read for all of them, each key's batch
   * what `read` would give for it, in the order given.
   */
  readTogether?(keys: KeyRead<C>[], signal: AbortSignal): Promise<TogetherRead<B>>;
  /**
   * The events of a read that come after `cursor`, and the cursor after them. A source stops at `limit`
   * events and says `more`: the rest of the batch then comes from calling again with the returned cursor, so
   * each SSE message carries the cursor after exactly its own events (every undelivered one still ahead of it).
   */
  advance(cursor: C, batch: B, startMs: number, limit?: number): TailStep<C>;
  /** A resumable form of a cursor for the SSE id (JSON; may drop detail). */
  compact(cursor: C): unknown;
  /** Rebuilds a cursor from `compact`'s output; undefined when it is not one. */
  restore(value: unknown): C | undefined;
  /** How the tail is shared by the subscribers of a key. */
  readonly tailing: TailSharing<C, B>;
}

/**
 * A source of any cursor and batch types, as code that holds sources of several kinds keeps them (the stream
 * service, a stream's plan). Such code hands a source only what that source made: the cursors it restored or
 * advanced, the batches it read — the tail hub keeps them apart through its generics (a key's subscribers and
 * batches are its own source's).
 */
export type AnyStreamSource = StreamSource<unknown, unknown>;
