import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { deriveLevel } from '../../core/log-level.js';
import type { Logger } from '../../core/logger.js';
import { type TailEvent, TailWindow } from '../../core/tail-window.js';
import type { StreamQuery } from '../../providers/log-stream/port.js';
import {
  BUS_START,
  type BusEntry,
  type Lease,
  type TailBus,
  type TailLeases,
} from '../../store/log-stream/tail-bus/index.js';

/** The upstream of a key, run by the replica holding its lease (`AwsLiveUpstream`). */
export interface Upstream {
  run(
    query: StreamQuery,
    window: TailWindow,
    sink: {
      publish(events: TailEvent[], coveredTo: number): Promise<void>;
      fail(kind: 'gap' | 'failed', error: unknown): Promise<void>;
      mode(mode: 'live' | 'poll', why?: string): void;
    },
    signal: AbortSignal,
  ): Promise<void>;
}

/**
 * What the holder publishes, version 1. Later versions only add fields: a replica reads the fields it knows of
 * any version, so two adjacent releases interoperate during a rolling deploy. Times are epoch ms; `null` stands
 * for "none" (JSON has no Infinity).
 */
export interface FeedMessageV1 {
  v: number;
  /** One holder's run of the key (a new holder, a new epoch). */
  epoch: string;
  /** When it was published, and when the epoch's previous message was (null: the first). */
  at: number;
  since: number | null;
  /** The holder's window vouches for every event from this timestamp on (null: for none, after a gap). */
  complete: number | null;
  coveredTo: number;
  /** [eventId, group, stream, timestamp, ingestionTime, message] */
  events: [string, string, string, number, number, string][];
  /** The upstream could not fill a seam (`gap`), failed for good, or was refused (its organization's cap). */
  end?: { kind: EndKind; message: string };
}

export type EndKind = 'gap' | 'failed' | 'refused';

export interface SharedTailOptions {
  /**
   * Takes a share of the key's organization (distinct upstreams it may have open in the cluster) for as long as
   * this replica runs the key's upstream; undefined when the organization has none left.
   */
  admit?: (query: StreamQuery) => Promise<(() => void) | undefined>;
  bus: TailBus;
  leases: TailLeases;
  upstream: Upstream;
  /** Events kept in each replica's window, behind the newest covered time (≥ the lookback). */
  retentionMs: number;
  /** How often a replica without the lease tries to take it (a dead holder's lease expires first). */
  leaseRetryMs: number;
  log?: Logger;
  now?: () => number;
}

export interface FeedListener {
  /** New events or positions: the hub may deliver now. */
  wake(): void;
  /** The upstream could not fill a seam, failed, or was refused: every subscriber ends. */
  end(kind: EndKind, message: string): void;
}

const MESSAGE_VERSION = 1;

const toWire = (e: TailEvent): FeedMessageV1['events'][number] => [
  e.eventId,
  e.logGroup,
  e.logStreamName,
  e.timestamp,
  e.ingestionTime,
  e.message,
];

const fromWire = ([
  eventId,
  logGroup,
  logStreamName,
  timestamp,
  ingestionTime,
  message,
]: FeedMessageV1['events'][number]): TailEvent | undefined => {
  if (
    typeof eventId !== 'string' ||
    typeof logGroup !== 'string' ||
    typeof logStreamName !== 'string' ||
    typeof message !== 'string' ||
    !Number.isSafeInteger(timestamp) ||
    !Number.isSafeInteger(ingestionTime)
  )
    return undefined;
  return { eventId, logGroup, logStreamName, timestamp, ingestionTime, message, level: deriveLevel(message) };
};

/**
 * One key followed by this replica: its window, fed by the bus; and, while this replica holds the key's lease,
 * its upstream, whose messages reach every replica (this one too) through the bus.
 */
export class KeyFeed {
  readonly window = new TailWindow();
  readonly listeners = new Set<FeedListener>();
  /** How the upstream reads, while this replica holds it. */
  mode: 'live' | 'poll' | undefined;
  private readonly stop = new AbortController();
  private readonly unsubscribe: () => void;
  private lease: Lease | undefined;
  private readonly startedAt: number;
  /** The newest seq the bus held when this replica began following the key; entries wait until it is known. */
  private replayedTo: string | undefined;
  private readonly waiting: BusEntry[] = [];

  constructor(
    readonly key: string,
    private readonly query: StreamQuery,
    private readonly options: SharedTailOptions,
    private readonly onStopped: () => void,
    private readonly onFallback: () => void = () => {},
  ) {
    this.startedAt = this.now();
    // What the buffer held when this replica began following: its events fill the window, but an `end` among them
    // belongs to subscribers that are gone. Entries wait until that point is known.
    void options.bus.latest(key).then(
      (seq) => this.replayed(seq ?? BUS_START),
      () => this.replayed(BUS_START),
    );
    this.unsubscribe = options.bus.subscribe(
      key,
      BUS_START,
      (entries) => {
        if (this.replayedTo === undefined) this.waiting.push(...entries);
        else this.receive(entries);
      },
      () => {
        // Messages were trimmed before this replica read them: the window vouches for nothing until new ones.
        if (this.lease === undefined) this.window.complete = Number.POSITIVE_INFINITY;
        this.window.heldFrom = Number.POSITIVE_INFINITY;
      },
    );
    void this.holdWhenFree();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Milliseconds since this replica began following the key (the window is warming up before its first message). */
  get age(): number {
    return this.now() - this.startedAt;
  }

  get holding(): boolean {
    return this.lease !== undefined;
  }

  close(): void {
    this.stop.abort();
    this.unsubscribe();
  }

  private replayed(seq: string): void {
    this.replayedTo = seq;
    const entries = this.waiting.splice(0);
    if (entries.length > 0 && !this.stop.signal.aborted) this.receive(entries);
  }

  private receive(entries: BusEntry[]): void {
    let changed = false;
    for (const { seq, payload } of entries) {
      const m = payload as Partial<FeedMessageV1> | null;
      if (m === null || typeof m !== 'object' || typeof m.v !== 'number' || m.v < MESSAGE_VERSION) continue;
      const events = Array.isArray(m.events)
        ? m.events.flatMap((w) => {
            const e = Array.isArray(w) ? fromWire(w) : undefined;
            return e === undefined ? [] : [e];
          })
        : [];
      const before = this.window.published;
      const coveredTo = typeof m.coveredTo === 'number' ? m.coveredTo : undefined;
      if (this.window.apply(events, seq, coveredTo).length > 0 || this.window.published > before) changed = true;
      if (typeof m.coveredTo === 'number' && m.coveredTo > this.window.coveredTo) {
        this.window.coveredTo = m.coveredTo;
        changed = true;
      }
      // The holder keeps its own window; a follower's vouches for what the messages it read since can.
      if (this.lease === undefined) {
        const complete = typeof m.complete === 'number' ? m.complete : Number.POSITIVE_INFINITY;
        if (this.window.complete === Number.POSITIVE_INFINITY) {
          this.window.complete =
            typeof m.since === 'number' && complete !== Number.POSITIVE_INFINITY
              ? Math.max(complete, m.since)
              : complete;
        } else this.window.complete = Math.max(this.window.complete, complete);
      }
      const current = seq > (this.replayedTo ?? BUS_START);
      if (current && m.end !== undefined && ['gap', 'failed', 'refused'].includes(m.end.kind)) {
        for (const l of [...this.listeners]) l.end(m.end.kind, String(m.end.message ?? ''));
      }
    }
    this.window.prune(this.window.coveredTo - this.options.retentionMs);
    if (changed) for (const l of this.listeners) l.wake();
  }

  /** Takes the key's lease whenever it is free (at once if nobody holds it; after a dead holder's expiry). */
  private async holdWhenFree(): Promise<void> {
    const signal = this.stop.signal;
    while (!signal.aborted) {
      let lease: Lease | undefined;
      try {
        lease = await this.options.leases.tryAcquire(this.key);
      } catch (error) {
        this.options.log?.warn({ err: error }, 'tail lease: could not ask the database');
      }
      if (signal.aborted) {
        await lease?.release().catch(() => {});
        return;
      }
      if (lease !== undefined) await this.hold(lease);
      await sleep(this.options.leaseRetryMs, undefined, { signal }).catch(() => {});
    }
  }

  private async hold(lease: Lease): Promise<void> {
    this.lease = lease;
    const epoch = randomUUID();
    let since: number | null = null;
    const run = new AbortController();
    const onAbort = () => run.abort();
    this.stop.signal.addEventListener('abort', onAbort, { once: true });
    lease.lost.addEventListener('abort', onAbort, { once: true });
    const publish = async (events: TailEvent[], end?: FeedMessageV1['end']) => {
      const at = this.now();
      const complete = this.window.complete;
      const message: FeedMessageV1 = {
        v: MESSAGE_VERSION,
        epoch,
        at,
        since,
        complete: Number.isFinite(complete) ? complete : null,
        coveredTo: this.window.coveredTo,
        events: events.map(toWire),
        ...(end === undefined ? {} : { end }),
      };
      since = at;
      // Retried while this replica holds the key: a message not stored is not given to anyone.
      let seq: string;
      for (let wait = 100; ; wait = Math.min(2_000, wait * 2)) {
        try {
          seq = await this.options.bus.publish(this.key, message);
          break;
        } catch (error) {
          if (run.signal.aborted) throw error;
          this.options.log?.warn({ err: error }, 'tail bus: could not publish; retrying');
          await sleep(wait, undefined, { signal: run.signal }).catch(() => {});
        }
      }
      // Stored: this replica's subscribers may have it now, without waiting for it to come back through the bus.
      this.window.apply(events, seq, message.coveredTo);
      if (events.length > 0 || end === undefined) for (const l of this.listeners) l.wake();
    };
    let share: (() => void) | undefined;
    try {
      if (this.options.admit !== undefined) {
        share = await this.options.admit(this.query);
        if (share === undefined) {
          await publish([], { kind: 'refused', message: 'the organization has its maximum of live tails open' });
          return;
        }
      }
      await this.options.upstream.run(
        this.query,
        this.window,
        {
          publish: (events) => publish(events),
          fail: (kind, error) => publish([], { kind, message: error instanceof Error ? error.message : String(error) }),
          mode: (mode, why) => {
            this.mode = mode;
            if (mode === 'poll' && why !== undefined) {
              this.onFallback();
              this.options.log?.warn({ key: this.key, why }, 'live tail polls FilterLogEvents');
            }
          },
        },
        run.signal,
      );
    } catch (error) {
      if (!run.signal.aborted) this.options.log?.error({ err: error }, 'tail upstream failed');
    } finally {
      share?.();
      this.window.dropUnpublished();
      this.mode = undefined;
      this.stop.signal.removeEventListener('abort', onAbort);
      lease.lost.removeEventListener('abort', onAbort);
      this.lease = undefined;
      await lease.release().catch(() => {});
    }
    if (this.listeners.size === 0) this.onStopped();
  }
}

/** The keys this replica follows. */
export class SharedTails {
  private readonly feeds = new Map<string, KeyFeed>();
  /** Upstreams that fell back from Live Tail to polling, since start. */
  fallbacks = 0;

  constructor(private readonly options: SharedTailOptions) {}

  /** Follows `key` (if not yet) and adds `listener`; returns the feed and the function that removes it. */
  follow(key: string, query: StreamQuery, listener: FeedListener): { feed: KeyFeed; leave: () => void } {
    let feed = this.feeds.get(key);
    if (feed === undefined) {
      const created: KeyFeed = new KeyFeed(
        key,
        query,
        this.options,
        () => {
          if (this.feeds.get(key) === created && created.listeners.size === 0) this.drop(key, created);
        },
        () => this.fallbacks++,
      );
      feed = created;
      this.feeds.set(key, feed);
    }
    feed.listeners.add(listener);
    const f = feed;
    return {
      feed: f,
      leave: () => {
        f.listeners.delete(listener);
        if (f.listeners.size === 0) this.drop(key, f);
      },
    };
  }

  private drop(key: string, feed: KeyFeed): void {
    feed.close();
    if (this.feeds.get(key) === feed) this.feeds.delete(key);
  }

  /** Upstreams this replica runs now, by mode (for /metrics). */
  upstreams(): { live: number; poll: number } {
    let live = 0;
    let poll = 0;
    for (const f of this.feeds.values()) {
      if (f.mode === 'live') live++;
      else if (f.mode === 'poll') poll++;
    }
    return { live, poll };
  }

  get following(): number {
    return this.feeds.size;
  }

  close(): void {
    for (const [key, feed] of this.feeds) this.drop(key, feed);
  }
}
