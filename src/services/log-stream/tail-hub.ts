import { appError } from '../../core/errors.js';
import type { StreamEvent, StreamQuery, StreamSource } from '../../providers/log-stream-source.js';
import type { KeyFeed, SharedTails } from './shared-tail.js';

export interface Subscriber<C> {
  cursor: C;
  startMs: number;
  /** False while the client cannot take more: its cursor then stays put and nothing is buffered for it. */
  ready(): boolean;
  deliver(events: StreamEvent[], cursor: C): void;
  fail(error: unknown): void;
}

interface Poller {
  // biome-ignore lint/suspicious/noExplicitAny: each poller has its own cursor type
  source: StreamSource<any>;
  query: StreamQuery;
  // biome-ignore lint/suspicious/noExplicitAny: subscribers of one poller share its cursor type
  subscribers: Set<Subscriber<any>>;
  timer?: NodeJS.Timeout;
  abort?: AbortController;
  /** A tick is running; `again`: another was asked for meanwhile. */
  running?: boolean;
  again?: boolean;
  lastTick?: number;
  /** The cluster-wide live feed of the key (sources with `live`). */
  shared?: { feed: KeyFeed; leave: () => void };
}

/** Reads of one woken key are at least this far apart. */
const WAKE_GAP_MS = 50;

export interface TailHubOptions {
  /** Events per delivery (one SSE message), for sources that can stop part-way through a read. */
  maxPerDelivery?: number;
  /** The keys this replica follows cluster-wide (sources with `live`); without it every key polls here. */
  shared?: SharedTails;
  /**
   * A key just followed has no window yet: cursors wait this long for its first message before reading
   * upstream on their own (a stream that switches from history to the tail is normally inside that window).
   */
  warmupWaitMs?: number;
}

/**
 * Shares the tail of every subscriber of one key (account, region, groups, stream filter, pattern).
 * Sources with a `live` part (aws) are fed by the key's one upstream in the cluster (`SharedTails`): each
 * replica keeps a window of recent events and its subscribers take from it; a cursor older than the window
 * reads upstream once (shared by every such cursor of the key) and then joins it. Other sources (local) are
 * read once per interval from the oldest cursor. Each subscriber then takes what lies past its own cursor.
 * A key stops as soon as its last subscriber leaves.
 */
export class TailHub {
  private readonly pollers = new Map<string, Poller>();
  /** Upstream reads made here (polls, and catch-up reads of cursors older than a window), for metrics and tests. */
  polls = 0;
  private readonly maxPerDelivery: number;

  constructor(
    private readonly intervalMs: number,
    options: TailHubOptions = {},
  ) {
    this.maxPerDelivery = options.maxPerDelivery ?? Number.POSITIVE_INFINITY;
    this.shared = options.shared;
    this.warmupWaitMs = options.warmupWaitMs ?? 10_000;
  }

  private readonly shared: SharedTails | undefined;
  private readonly warmupWaitMs: number;

  static key(q: StreamQuery): string {
    return JSON.stringify([q.account.id, q.region, [...q.logGroups].sort(), q.streams, q.pattern]);
  }

  get activePollers(): number {
    return this.pollers.size;
  }

  subscribe<C>(source: StreamSource<C>, query: StreamQuery, subscriber: Subscriber<C>): () => void {
    const key = TailHub.key(query);
    let poller = this.pollers.get(key);
    if (poller === undefined) {
      const created: Poller = { source, query, subscribers: new Set() };
      poller = created;
      this.pollers.set(key, created);
      if (source.live !== undefined && this.shared !== undefined) {
        created.shared = this.shared.follow(key, query, {
          wake: () => this.soon(key, created),
          end: (kind, message) => {
            const error =
              kind === 'gap'
                ? appError('logs:stream:gap', { internal: false })
                : kind === 'refused'
                  ? appError('logs:stream:too-many-streams', {
                      description:
                        'Your organization has its maximum of distinct live tails on aws open in the cluster; close one, or share one (same account, region, groups, stream filter and pattern).',
                    })
                  : Object.assign(new Error(message), { name: 'UpstreamFailed' });
            for (const s of [...created.subscribers]) s.fail(error);
          },
        });
      }
      this.schedule(key, created);
    }
    poller.subscribers.add(subscriber);
    const p = poller;
    return () => {
      p.subscribers.delete(subscriber);
      if (p.subscribers.size === 0) this.stop(key, p);
    };
  }

  private stop(key: string, poller: Poller): void {
    clearTimeout(poller.timer);
    poller.abort?.abort();
    poller.shared?.leave();
    if (this.pollers.get(key) === poller) this.pollers.delete(key);
  }

  private schedule(key: string, poller: Poller): void {
    clearTimeout(poller.timer);
    poller.timer = setTimeout(() => void this.tick(key, poller), this.intervalMs);
    poller.timer.unref?.();
  }

  /**
   * New events in a key's window, or written to a local account: deliver now rather than at the next interval
   * (woken reads of one key are at least WAKE_GAP_MS apart, however often it is woken).
   */
  private soon(key: string, poller: Poller): void {
    if (this.pollers.get(key) !== poller) return;
    if (poller.running) poller.again = true;
    else {
      clearTimeout(poller.timer);
      const wait = Math.max(0, (poller.lastTick ?? 0) + WAKE_GAP_MS - Date.now());
      poller.timer = setTimeout(() => void this.tick(key, poller), wait);
      poller.timer.unref?.();
    }
  }

  /** Events were written to local account `accountId` (its tails read now). */
  wakeAccount(accountId: string): void {
    for (const [key, poller] of this.pollers) {
      if (poller.shared === undefined && poller.query.account.id === accountId) this.soon(key, poller);
    }
  }

  private async tick(key: string, poller: Poller): Promise<void> {
    if (poller.running || this.pollers.get(key) !== poller) return;
    poller.running = true;
    try {
      do {
        poller.again = false;
        await this.serve(poller);
      } while (poller.again && this.pollers.get(key) === poller);
    } finally {
      poller.running = false;
    }
    if (this.pollers.get(key) === poller && poller.subscribers.size > 0) this.schedule(key, poller);
  }

  private async serve(poller: Poller): Promise<void> {
    poller.lastTick = Date.now();
    const ready = [...poller.subscribers].filter((s) => s.ready());
    if (ready.length === 0) return;
    const live = poller.source.live;
    const shared = poller.shared;
    if (live !== undefined && shared !== undefined) {
      const window = shared.feed.window;
      const warming = shared.feed.age < this.warmupWaitMs;
      // Cursors resumed from a bus position wait (while the window warms up) until the window can rebuild them.
      const resolved = ready.filter((s) => live.resolve(s.cursor, window, warming) !== 'wait');
      const inWindow = resolved.filter((s) => live.floor(s.cursor) >= window.complete);
      if (inWindow.length > 0) {
        const from = Math.min(...inWindow.map((s) => live.floor(s.cursor)));
        this.deliver(poller, inWindow, live.batch(window, from));
      }
      const behind = resolved.filter((s) => live.floor(s.cursor) < window.complete);
      if (behind.length > 0 && !(warming && window.complete === Number.POSITIVE_INFINITY))
        await this.read(poller, behind);
      return;
    }
    await this.read(poller, ready);
  }

  // biome-ignore lint/suspicious/noExplicitAny: subscribers of one poller share its cursor type
  private async read(poller: Poller, subscribers: Subscriber<any>[]): Promise<void> {
    poller.abort = new AbortController();
    try {
      this.polls++;
      const batch = await poller.source.read(
        poller.query,
        subscribers.map((s) => s.cursor),
        poller.abort.signal,
      );
      this.deliver(poller, subscribers, batch);
    } catch (error) {
      if (!poller.abort.signal.aborted) for (const s of subscribers) s.fail(error);
    }
  }

  // biome-ignore lint/suspicious/noExplicitAny: subscribers of one poller share its cursor type
  private deliver(poller: Poller, subscribers: Subscriber<any>[], batch: unknown): void {
    for (const s of subscribers) {
      // Part by part when the source stops at the limit, each delivered with the cursor after it; a client
      // that falls behind meanwhile keeps its place and gets the rest from a later read.
      for (let more = true; more && poller.subscribers.has(s); ) {
        const step = poller.source.advance(s.cursor, batch, s.startMs, this.maxPerDelivery);
        s.cursor = step.cursor;
        if (step.events.length > 0) s.deliver(step.events, step.cursor);
        more = step.more === true && step.events.length > 0 && s.ready();
      }
    }
  }

  close(): void {
    for (const [key, p] of this.pollers) this.stop(key, p);
  }
}
