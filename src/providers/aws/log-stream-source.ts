import {
  FilterLogEventsCommand,
  type FilterLogEventsCommandInput,
  type FilteredLogEvent,
} from '@aws-sdk/client-cloudwatch-logs';
import type { AwsClients } from './clients.js';
import type { AwsQuotas, RateLimiter } from './quotas.js';
import { TokenBucket } from './token-bucket.js';
import type { CloudAccount } from '../../core/log-query/types.js';
import { linkSignals } from '../../core/abort.js';
import { deriveLevel } from '../../core/log-level.js';
import { numberCopies, type TailWindow } from '../../core/tail-window.js';
import type { HistoryCursor, StreamEvent, StreamQuery, StreamSource } from '../log-stream-source.js';

/**
 * Tail position on CloudWatch Logs. Every event with a timestamp before `ts`
 * is behind the cursor (history's, already delivered, or later than the
 * lookback allows); `seen` holds the events at or after `ts` that were
 * already delivered, oldest first. `ts` trails the newest read by the
 * lookback, so an event ingested up to `lookbackMs` after its timestamp is
 * still found — and delivered once, because its id is not in `seen`.
 */
export interface AwsCursor {
  ts: number;
  /** `[timestamp, eventId]` of delivered events with timestamp ≥ `ts`, oldest first. */
  seen: [number, string][];
  /** Events at `ts` with an eventId up to this one are behind the cursor too (a compact position, restored). */
  upTo?: string;
  /**
   * Set on the cursor after one part of a read delivered in parts: `[timestamp, eventId]` of the first event
   * not yet delivered. `ts` is at or below it; `compact` never moves past it.
   */
  hold?: [number, string];
  /**
   * After a delivery from a replica's window (see core/tail-window.ts): the bus entry it had reached and the
   * `coveredTo` of that batch. With them a resumed cursor's delivered events are exactly the window's published
   * events from `ts` below `c` by entries up to `s` (before `hold`), however many: the SSE id need not list them.
   */
  s?: string;
  c?: number;
  /** Restored with `s`/`c`: its `seen` is to be rebuilt from a window first (`live.resolve`). */
  pending?: boolean;
}

/** What `live.resolve` found for a restored cursor. */
export type Resolution = 'ready' | 'wait' | 'fallback';

export interface AwsStreamOptions {
  /** FilterLogEvents calls per second per account and region (AWS: 5, not adjustable). */
  requestsPerSecond: number;
  /**
   * Token bucket size. 1 (the default) spaces calls evenly, so no rolling second ever holds more than
   * `requestsPerSecond`; a larger bucket lowers latency after a quiet spell but can exceed it briefly.
   */
  burst: number;
  /** How far before the newest read the tail reads again, for events ingested late (CloudWatch agents batch for seconds). */
  lookbackMs: number;
  /** FilterLogEvents pages one tail read may take per log group (the rest waits for the next read). */
  maxPagesPerRead: number;
  /** FilterLogEvents `limit` (events per page, AWS max 10,000); unset: AWS's own (10,000 or 1 MB). */
  pageLimit?: number;
  /** The AWS quotas held cluster-wide (FilterLogEvents per AWS account and region); unset: a bucket per process. */
  quotas?: Pick<AwsQuotas, 'filterLogEvents'>;
  /** The process's client factory, and the time limit of one call. */
  aws: Pick<AwsClients, 'cloudWatchLogs' | 'callTimeoutMs'>;
  now?: () => number;
}

export const AWS_STREAM_DEFAULTS: Omit<AwsStreamOptions, 'aws'> = {
  requestsPerSecond: 5,
  burst: 1,
  lookbackMs: 5_000,
  maxPagesPerRead: 10,
};

/** AWS allows at most 100 `logStreamNames` per FilterLogEvents call. */
const MAX_NAMES_PER_CALL = 100;
/** Delivered ids a cursor keeps at most (beyond, its floor moves up and the oldest are forgotten). */
const MAX_SEEN = 5_000;
/** JSON bytes of a compact cursor: the SSE id (base64url of the whole resume point) must stay under 4096 characters. */
const COMPACT_BYTES = 2_900;
const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/** One FilterLogEvents scan target: a log group and at most 100 stream names, or a prefix, or every stream. */
interface Lane {
  group: string;
  streams: Pick<FilterLogEventsCommandInput, 'logStreamNamePrefix' | 'logStreamNames'>;
}

/** What one shared tail read found. */
interface TailBatch {
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

/**
 * A tail batch from a replica's live window (see core/tail-window.ts): every event of the window from `from`
 * on, the window vouching for everything at or after its `complete` up to `coveredTo`.
 */
export function windowBatch(window: TailWindow, from: number): TailBatch {
  // Only what is published (stored on the bus): a resumed cursor is rebuilt from published entries alone.
  const to = window.published;
  if (!(to >= from) || window.appliedSeq === undefined)
    return { from, to: from, coveredTo: from, truncated: false, events: [], byId: new Map() };
  const events = window.since(from).filter((e) => e.seq !== undefined);
  return { from, to, coveredTo: to + 1, truncated: false, events, byId: window, seq: window.appliedSeq };
}

/** Rebuilds the delivered events of a cursor restored with a bus position, from a window that can vouch for them. */
export function resolveCursor(cursor: AwsCursor, window: TailWindow, warming: boolean): Resolution {
  if (!cursor.pending) return 'ready';
  const { s, c } = cursor;
  const caughtUp = window.appliedSeq !== undefined && s !== undefined && window.appliedSeq >= s;
  // What the cursor was given is rebuilt from the published events the window still holds; whether the window
  // vouches for the rest (`complete`) decides later whether the cursor reads from it or upstream (after a gap).
  if (caughtUp && c !== undefined && window.heldFrom <= cursor.ts) {
    const given = new Map(cursor.seen.map(([ts, id]) => [id, ts]));
    for (const [ts, id] of window.delivered(cursor.ts, c, s, cursor.hold)) given.set(id, ts);
    cursor.seen = [...given].map(([id, ts]): [number, string] => [ts, id]);
    cursor.seen.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
    cursor.pending = false;
    return 'ready';
  }
  if (warming) return 'wait';
  // The window cannot say (its entries are gone, or it does not reach back so far): the ids the SSE id carried.
  cursor.pending = false;
  delete cursor.s;
  delete cursor.c;
  return 'fallback';
}

const byKey = (a: StreamEvent, b: StreamEvent) =>
  a.timestamp - b.timestamp || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

/** Thrown for an answer no event can be read from: the stream reports it rather than skip the event in silence. */
export class UnreadableEventError extends Error {
  override name = 'UnreadableEventError';
}

/**
 * An event as FilterLogEvents answered it. The SDK hands JSON fields over without checking their types, so an
 * event whose id or time is missing or of the wrong type (a broken AWS-compatible endpoint) fails the read: the
 * stream then reports the error rather than skip the event in silence.
 */
const toEvent = (e: FilteredLogEvent, logGroup: string): StreamEvent => {
  const { eventId, timestamp, ingestionTime, message, logStreamName } = e as Record<keyof FilteredLogEvent, unknown>;
  const text = (v: unknown) => v === undefined || v === null || typeof v === 'string';
  if (
    typeof eventId !== 'string' ||
    eventId === '' ||
    !Number.isSafeInteger(timestamp) ||
    !text(message) ||
    !text(logStreamName)
  ) {
    throw new UnreadableEventError(
      `FilterLogEvents answered an event that cannot be read: ${JSON.stringify(e).slice(0, 200)}`,
    );
  }
  const body = (message as string | null | undefined) ?? '';
  return {
    eventId,
    logStreamName: (logStreamName as string | null | undefined) ?? '',
    message: body,
    timestamp: timestamp as number,
    ingestionTime: Number.isSafeInteger(ingestionTime) ? (ingestionTime as number) : (timestamp as number),
    level: deriveLevel(body),
    logGroup,
  };
};

const isNotFound = (error: unknown) => (error as { name?: unknown } | null)?.name === 'ResourceNotFoundException';

/**
 * Log stream source for `aws` accounts: FilterLogEvents for history and for
 * a polled tail (see docs/decisions.md, "Log stream on aws"). The filter
 * pattern goes upstream unchanged; CloudWatch's own matching is authoritative.
 * A log group that does not exist reads as empty, as on `local`.
 */
export class AwsStreamSource implements StreamSource<AwsCursor> {
  private readonly options: AwsStreamOptions;
  private readonly limiters = new Map<string, RateLimiter>();
  readonly live = { batch: windowBatch, floor: (cursor: AwsCursor) => cursor.ts, resolve: resolveCursor };
  private readonly now: () => number;

  constructor(options: Partial<AwsStreamOptions> & Pick<AwsStreamOptions, 'aws'>) {
    this.options = { ...AWS_STREAM_DEFAULTS, ...options };
    this.now = this.options.now ?? (() => Date.now());
  }

  /** The rate limiter of one account and region (shared by history and tail, and by every retry). */
  limiter(account: CloudAccount, region: string): RateLimiter {
    const key = `${account.id}\u0000${region}`;
    let limiter = this.limiters.get(key);
    if (limiter === undefined) {
      // Cluster-wide and by AWS account when the quotas are wired (every replica, every cloud account of one AWS
      // account); otherwise this process's own bucket.
      limiter =
        this.options.quotas?.filterLogEvents(account, region) ??
        new TokenBucket(this.options.requestsPerSecond, this.options.burst);
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  /**
   * FilterLogEvents with the account's rate limit. The client is the one the factory shares with Insights; the limit
   * rides on the command, after the retry middleware so every attempt (a throttled retry too) takes a token, and
   * before signing so the signature is fresh.
   */
  private filterLogEvents(account: CloudAccount, region: string, input: FilterLogEventsCommandInput) {
    const limiter = this.limiter(account, region);
    const command = new FilterLogEventsCommand(input);
    const rateLimit =
      (next: (args: unknown) => Promise<unknown>, context: { __smithy_context?: { abortSignal?: AbortSignal } }) =>
      async (args: unknown) => {
        await limiter.take(context.__smithy_context?.abortSignal);
        return next(args);
      };
    command.middlewareStack.addRelativeTo(
      rateLimit as unknown as Parameters<typeof command.middlewareStack.addRelativeTo>[0],
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'berthFilterLogEventsRateLimit' },
    );
    return { client: this.options.aws.cloudWatchLogs(account, region), command };
  }

  private lanes(q: StreamQuery): Lane[] {
    const lanes: Lane[] = [];
    for (const group of q.logGroups) {
      const s = q.streams;
      if (s.kind === 'names') {
        const names = [...new Set(s.names)];
        for (let i = 0; i < names.length; i += MAX_NAMES_PER_CALL) {
          lanes.push({ group, streams: { logStreamNames: names.slice(i, i + MAX_NAMES_PER_CALL) } });
        }
      } else if (s.kind === 'prefix' && s.prefix !== '') {
        lanes.push({ group, streams: { logStreamNamePrefix: s.prefix } });
      } else {
        lanes.push({ group, streams: {} });
      }
    }
    return lanes;
  }

  /** One FilterLogEvents page. */
  private async page(
    q: StreamQuery,
    lane: Lane,
    range: { startTime: number; endTime?: number },
    nextToken: string | undefined,
    signal: AbortSignal,
  ): Promise<{ events: StreamEvent[]; nextToken?: string }> {
    const input: FilterLogEventsCommandInput = {
      ...(lane.group.startsWith('arn:') ? { logGroupIdentifier: lane.group } : { logGroupName: lane.group }),
      ...lane.streams,
      // AWS ignores it and always interleaves; AWS-compatible endpoints that honour it would otherwise return a
      // group's events stream by stream, and the merge (which takes pages as oldest first) would drop some.
      interleaved: true,
      startTime: range.startTime,
      ...(range.endTime === undefined ? {} : { endTime: range.endTime }),
      ...(q.pattern.trim() === '' ? {} : { filterPattern: q.pattern }),
      ...(nextToken === undefined ? {} : { nextToken }),
      ...(this.options.pageLimit === undefined ? {} : { limit: this.options.pageLimit }),
    };
    // One call, its retries included, is bounded like every AWS call (AWS_CALL_TIMEOUT_MS): an endpoint that never
    // answers ends the stream with an error instead of holding it, and every tail sharing its poller, forever.
    const call = linkSignals([signal], this.options.aws.callTimeoutMs, `AWS FilterLogEvents`);
    try {
      const { client, command } = this.filterLogEvents(q.account, q.region, input);
      const out = await client.send(command, { abortSignal: call.signal });
      const events = (out.events ?? []).map((e) => toEvent(e, lane.group));
      return out.nextToken ? { events, nextToken: out.nextToken } : { events };
    } catch (error) {
      if (isNotFound(error) && !signal.aborted) return { events: [] };
      throw error;
    } finally {
      call.dispose();
    }
  }

  async tailStart(): Promise<AwsCursor> {
    // The switch point lies one lookback back: an event written just before the stream opened but
    // ingested after history read its millisecond is still delivered, by the tail.
    return { ts: Math.max(0, this.now() - this.options.lookbackMs), seen: [] };
  }

  async *history(
    q: StreamQuery,
    window: { startMs: number; endMs: number },
    after: HistoryCursor | undefined,
    switchPoint: AwsCursor | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]> {
    const startTime = Math.max(0, window.startMs, after?.ts ?? 0);
    const last = Math.min(window.endMs, switchPoint === undefined ? Number.MAX_SAFE_INTEGER : switchPoint.ts - 1);
    if (startTime > last) return;
    const range = { startTime, ...(last >= Number.MAX_SAFE_INTEGER ? {} : { endTime: last }) };
    const size = Math.max(1, batchSize);

    interface LaneState {
      lane: Lane;
      token?: string;
      done: boolean;
      /** Timestamp of the newest event read: this lane may still hold more of that millisecond, none before. */
      frontier: number;
      pending: StreamEvent[];
      inflight?: Promise<void>;
      error?: unknown;
    }
    const states: LaneState[] = this.lanes(q).map((lane) => ({ lane, done: false, frontier: -Infinity, pending: [] }));
    const abort = new AbortController();
    const onAbort = () => abort.abort(signal.reason);
    if (signal.aborted) return;
    signal.addEventListener('abort', onAbort, { once: true });
    /** Nothing at or below this (timestamp, eventId) is emitted again. */
    let emitted: HistoryCursor | undefined = after;
    /** Every event below this timestamp was emitted (or is behind `after`). */
    let threshold = -Infinity;

    const fetch = (s: LaneState) => {
      s.inflight = this.page(q, s.lane, range, s.token, abort.signal).then(
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
        // Events below every unfinished lane's frontier are final: no lane can still return one before them.
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
          ready.sort(byKey);
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
        if (inflight.length === 0) return; // every lane done and drained
        await Promise.race(inflight);
        if (signal.aborted) return;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      abort.abort();
    }
  }

  /**
   * One sweep per log group (per ≤ 100 stream names) from the oldest cursor to now, at most
   * `maxPagesPerRead` pages each, shared by every subscriber of the query.
   */
  async read(q: StreamQuery, cursors: AwsCursor[], signal: AbortSignal): Promise<TailBatch> {
    const to = this.now();
    const from = Math.max(0, Math.min(...cursors.map((c) => c.ts)));
    if (cursors.length === 0 || from > to)
      return { from, to, coveredTo: from, truncated: false, events: [], byId: new Map() };
    const results = await Promise.all(
      this.lanes(q).map(async (lane) => {
        const events: StreamEvent[] = [];
        let token: string | undefined;
        for (let pages = 0; pages < this.options.maxPagesPerRead; pages++) {
          const page = await this.page(q, lane, { startTime: from, endTime: to }, token, signal);
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
        // Pages come oldest first: that lane may still hold more of its newest millisecond, nothing before it.
        let newest = from;
        for (const e of r.events) newest = Math.max(newest, e.timestamp);
        coveredTo = Math.min(coveredTo, newest);
      }
    }
    const events = [...new Set(byId.values())].sort(byKey);
    return { from, to, coveredTo, truncated, events, byId };
  }

  /**
   * The events of a read past `cursor`, at most `limit` of them. Stopping early, the cursor returned has every
   * undelivered event ahead of it: `ts` at or below the first one's timestamp, the delivered ones from `ts` on in
   * `seen`, and that first event in `hold` (so `compact` keeps it ahead too); the rest comes from calling again.
   */
  advance(
    cursor: AwsCursor,
    batch: unknown,
    startMs: number,
    limit = Number.POSITIVE_INFINITY,
  ): { events: StreamEvent[]; cursor: AwsCursor; more: boolean } {
    const b = batch as TailBatch;
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
    let floor = Math.max(cursor.ts, b.coveredTo - this.options.lookbackMs);
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
      out.s = b.seq;
      out.c = b.coveredTo;
    }
    return { events, cursor: out, more: next !== undefined };
  }

  /**
   * `{t, a?, i}`: the floor, the position in its millisecond when known (ids up to `a` there are behind), and the
   * delivered ids from the floor on. When those ids do not fit an SSE id: after a whole read, the resume point
   * moves to the newest delivered millisecond with its ids, or to the newest delivered position in it (late
   * arrivals before it are given up, nothing is repeated). After one part of a read, it never moves past the
   * first undelivered event (`hold`): the point is the position right before it, with as many of the ids
   * delivered beyond it (by earlier reads) as fit — the others would be sent again, none is lost.
   */
  compact(cursor: AwsCursor): unknown {
    if (cursor.s !== undefined && cursor.c !== undefined) {
      // The bus position says what was delivered; the ids (as many as fit) are for a replica whose window cannot.
      const out = {
        t: cursor.ts,
        ...(cursor.upTo === undefined ? {} : { a: cursor.upTo }),
        s: cursor.s,
        c: cursor.c,
        ...(cursor.hold === undefined ? {} : { h: cursor.hold }),
        i: [] as string[],
      };
      let bytes = jsonBytes(out);
      for (const [, id] of cursor.seen) {
        bytes += jsonBytes(id) + 1;
        if (bytes > COMPACT_BYTES) break;
        out.i.push(id);
      }
      return out;
    }
    const ids = cursor.seen.map(([, id]) => id);
    const full = { t: cursor.ts, ...(cursor.upTo === undefined ? {} : { a: cursor.upTo }), i: ids };
    if (jsonBytes(full) <= COMPACT_BYTES) return full;
    if (cursor.hold === undefined) {
      const newest = cursor.seen[cursor.seen.length - 1]![0];
      const atNewest = cursor.seen.filter(([ts]) => ts === newest).map(([, id]) => id);
      const a = newest === cursor.ts ? cursor.upTo : undefined;
      const withIds = { t: newest, ...(a === undefined ? {} : { a }), i: atNewest };
      if (jsonBytes(withIds) <= COMPACT_BYTES) return withIds;
      let position = a;
      for (const id of atNewest) if (position === undefined || id > position) position = id;
      return { t: newest, a: position, i: [] };
    }
    const [ht, hid] = cursor.hold;
    // Delivered events of that millisecond before the held one are in eventId order below it.
    let a = ht === cursor.ts ? cursor.upTo : undefined;
    for (const [ts, id] of cursor.seen) if (ts === ht && id < hid && (a === undefined || id > a)) a = id;
    const out = { t: ht, ...(a === undefined ? {} : { a }), i: [] as string[] };
    let bytes = jsonBytes(out);
    for (const [ts, id] of cursor.seen) {
      if (ts < ht || (ts === ht && id < hid)) continue;
      bytes += jsonBytes(id) + 1;
      if (bytes > COMPACT_BYTES) break;
      out.i.push(id);
    }
    return out;
  }

  restore(value: unknown): AwsCursor | undefined {
    if (value === null || typeof value !== 'object') return undefined;
    const { t, i, a } = value as { t?: unknown; i?: unknown; a?: unknown };
    if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0) return undefined;
    const isId = (id: unknown): id is string => typeof id === 'string' && id.length > 0 && id.length <= 256;
    if (!Array.isArray(i) || i.length > 1_000 || !i.every(isId)) return undefined;
    if (a !== undefined && !isId(a)) return undefined;
    // Their timestamps are not in the id; `t` is a lower bound, and the next read finds the real ones.
    const cursor: AwsCursor = { ts: t, seen: [...new Set(i as string[])].map((id): [number, string] => [t, id]) };
    if (a !== undefined) cursor.upTo = a;
    const { s, c, h } = value as { s?: unknown; c?: unknown; h?: unknown };
    if (typeof s === 'string' && s.length > 0 && s.length <= 64 && Number.isSafeInteger(c) && (c as number) >= t) {
      cursor.s = s;
      cursor.c = c as number;
      cursor.pending = true;
      if (Array.isArray(h) && h.length === 2 && Number.isSafeInteger(h[0]) && isId(h[1]) && (h[0] as number) >= t)
        cursor.hold = [h[0] as number, h[1] as string];
    }
    return cursor;
  }
}
