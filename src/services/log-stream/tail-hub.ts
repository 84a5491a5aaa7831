import type { StreamEvent, StreamQuery, StreamSource } from '../../providers/log-stream-source.js';

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
}

/**
 * Shares upstream polls: every subscriber of one key (account, region,
 * groups, stream filter, pattern) is served by one read per interval, from
 * the oldest of their cursors; each then takes what lies past its own.
 * The poller stops as soon as its last subscriber leaves.
 */
export class TailHub {
  private readonly pollers = new Map<string, Poller>();
  /** Upstream reads made, for metrics and tests. */
  polls = 0;

  constructor(
    private readonly intervalMs: number,
    /** Events per delivery (one SSE message), for sources that can stop part-way through a read. */
    private readonly maxPerDelivery = Number.POSITIVE_INFINITY,
  ) {}

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
      poller = { source, query, subscribers: new Set() };
      this.pollers.set(key, poller);
      this.schedule(key, poller);
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
    if (this.pollers.get(key) === poller) this.pollers.delete(key);
  }

  private schedule(key: string, poller: Poller): void {
    poller.timer = setTimeout(() => void this.tick(key, poller), this.intervalMs);
    poller.timer.unref?.();
  }

  private async tick(key: string, poller: Poller): Promise<void> {
    const ready = [...poller.subscribers].filter((s) => s.ready());
    if (ready.length > 0) {
      poller.abort = new AbortController();
      try {
        this.polls++;
        const batch = await poller.source.read(
          poller.query,
          ready.map((s) => s.cursor),
          poller.abort.signal,
        );
        for (const s of ready) {
          // Part by part when the source stops at the limit, each delivered with the cursor after it; a client
          // that falls behind meanwhile keeps its place and gets the rest from a later read.
          for (let more = true; more && poller.subscribers.has(s); ) {
            const step = poller.source.advance(s.cursor, batch, s.startMs, this.maxPerDelivery);
            s.cursor = step.cursor;
            if (step.events.length > 0) s.deliver(step.events, step.cursor);
            more = step.more === true && step.events.length > 0 && s.ready();
          }
        }
      } catch (error) {
        if (!poller.abort.signal.aborted) for (const s of [...poller.subscribers]) s.fail(error);
      }
    }
    if (this.pollers.get(key) === poller && poller.subscribers.size > 0) this.schedule(key, poller);
  }

  close(): void {
    for (const [key, p] of this.pollers) this.stop(key, p);
  }
}
