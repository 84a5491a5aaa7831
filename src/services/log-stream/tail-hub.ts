import { appError } from '../../core/errors.js';
import { runAsTenant } from '../../core/tenant-context.js';
import type {
  AnyStreamSource,
  StreamEvent,
  StreamQuery,
  StreamSource,
  TogetherRead,
} from '../../providers/log-stream/port.js';
import type { KeyFeed, SharedTails } from './shared-tail.js';

export interface Subscriber<C> {
  cursor: C;
  startMs: number;
  /** False while the client cannot take more: its cursor then stays put and nothing is buffered for it. */
  ready(): boolean;
  deliver(events: StreamEvent[], cursor: C): void;
  fail(error: unknown): void;
}

/** A key's tail: its source, and its subscribers (their cursors are that source's). */
interface Poller<C, B> {
  source: StreamSource<C, B>;
  query: StreamQuery;
  subscribers: Set<Subscriber<C>>;
  timer?: NodeJS.Timeout;
  abort?: AbortController;
  /** A tick is running; `again`: another was asked for meanwhile. */
  running?: boolean;
  again?: boolean;
  lastTick?: number;
  /** The cluster-wide live feed of the key (sources whose tail is `live`). */
  shared?: { feed: KeyFeed; leave: () => void };
  /** The account's keys read together (sources with `readTogether`): this key is read with them, not on its own. */
  group?: AnyReadGroup;
}

/**
 * The hub's pollers and groups, whatever their source: each is handed only to methods generic over its own
 * cursor and batch types, so a source is given only its own cursors and batches.
 */
type AnyPoller = Poller<unknown, unknown>;

/**
 * The keys of one account (and source) read together: one timer, one read per interval or wake, whatever the
 * number of keys. Keys of one account belong to one organization, so a read never mixes tenants.
 */
interface ReadGroup<C, B> {
  id: string;
  accountId: string;
  source: StreamSource<C, B>;
  organizationId: string;
  pollers: Set<Poller<C, B>>;
  timer?: NodeJS.Timeout;
  abort?: AbortController;
  running?: boolean;
  again?: boolean;
  lastTick?: number;
}

type AnyReadGroup = ReadGroup<unknown, unknown>;

/** Reads of one woken key are at least this far apart. */
const WAKE_GAP_MS = 50;

export interface TailHubOptions {
  /** Events per delivery (one SSE message), for sources that can stop part-way through a read. */
  maxPerDelivery?: number;
  /** The keys this replica follows cluster-wide (sources whose tail is `live`); without it every key polls here. */
  shared?: SharedTails;
  /**
   * A key just followed has no window yet: cursors wait this long for its first message before reading
   * upstream on their own (a stream that switches from history to the tail is normally inside that window).
   */
  warmupWaitMs?: number;
}

/**
 * Shares the tail of every subscriber of one key (account, region, groups, stream filter, pattern).
 * Sources whose tail is `live` (aws) are fed by the key's one upstream in the cluster (`SharedTails`): each
 * replica keeps a window of recent events and its subscribers take from it; a cursor older than the window
 * reads upstream once (shared by every such cursor of the key) and then joins it. Sources that read keys
 * together (local) are read once per interval (or wake) per account, every key of the account with ready
 * subscribers in one read: ten tails with ten stream prefixes cost the database what one does. Others are read
 * once per interval per key, from its oldest cursor. Each subscriber then takes what lies past its own cursor.
 * A key stops as soon as its last subscriber leaves.
 */
export class TailHub {
  private readonly pollers = new Map<string, AnyPoller>();
  private readonly groups = new Map<string, AnyReadGroup>();
  /** Reads of a key (alone or with others), and catch-up reads of cursors older than a window: metrics and tests. */
  polls = 0;
  /** Reads made upstream: one per read of an account's keys together, one per read of a key alone. */
  reads = 0;
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

  /** Accounts whose keys are read together now. */
  get activeGroups(): number {
    return this.groups.size;
  }

  subscribe<C, B>(source: StreamSource<C, B>, query: StreamQuery, subscriber: Subscriber<C>): () => void {
    const key = TailHub.key(query);
    let poller = this.pollers.get(key);
    if (poller === undefined) {
      const created: Poller<C, B> = { source, query, subscribers: new Set() };
      poller = created;
      this.pollers.set(key, created);
      if (source.tailing.kind === 'live' && this.shared !== undefined) {
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
      if (created.shared === undefined && source.readTogether !== undefined) this.join(created);
      else this.schedule(key, created);
    }
    poller.subscribers.add(subscriber);
    const p = poller;
    return () => {
      p.subscribers.delete(subscriber);
      if (p.subscribers.size === 0) this.stop(key, p);
    };
  }

  private stop(key: string, poller: AnyPoller): void {
    clearTimeout(poller.timer);
    poller.abort?.abort();
    poller.shared?.leave();
    if (this.pollers.get(key) === poller) this.pollers.delete(key);
    const group = poller.group;
    if (group !== undefined) {
      group.pollers.delete(poller);
      if (group.pollers.size === 0) {
        clearTimeout(group.timer);
        group.abort?.abort();
        if (this.groups.get(group.id) === group) this.groups.delete(group.id);
      }
    }
  }

  /** A key of a source that reads keys together joins its account's group (read at the group's next tick). */
  private join<C, B>(poller: Poller<C, B>): void {
    const id = `${sourceId(poller.source)}\u0000${poller.query.account.id}`;
    let group = this.groups.get(id);
    if (group === undefined) {
      const created: ReadGroup<C, B> = {
        id,
        accountId: poller.query.account.id,
        source: poller.source,
        organizationId: poller.query.account.organizationId,
        pollers: new Set(),
      };
      group = created;
      this.groups.set(id, created);
      this.scheduleGroup(created, this.intervalMs);
    }
    group.pollers.add(poller);
    poller.group = group;
  }

  private scheduleGroup(group: AnyReadGroup, wait: number): void {
    clearTimeout(group.timer);
    group.timer = setTimeout(() => void this.tickGroup(group), wait);
    group.timer.unref?.();
  }

  /** Read the group now rather than at its next interval (woken reads at least WAKE_GAP_MS apart). */
  private groupSoon(group: AnyReadGroup): void {
    if (this.groups.get(group.id) !== group) return;
    if (group.running) group.again = true;
    else this.scheduleGroup(group, Math.max(0, (group.lastTick ?? 0) + WAKE_GAP_MS - Date.now()));
  }

  private async tickGroup(group: AnyReadGroup): Promise<void> {
    if (group.running || this.groups.get(group.id) !== group) return;
    group.running = true;
    group.again = false;
    let more = false;
    try {
      more = await this.serveGroup(group);
    } finally {
      group.running = false;
    }
    if (this.groups.get(group.id) !== group || group.pollers.size === 0) return;
    // Woken while reading, or a lane stopped at its budget: the next read follows soon, but never sooner than
    // WAKE_GAP_MS after this one began (a stream of wakes on a slow database must not become back-to-back reads).
    if (more || group.again) this.groupSoon(group);
    else this.scheduleGroup(group, this.intervalMs);
  }

  /** One read of every key of the group with a subscriber ready; true when a key's read stopped short. */
  private async serveGroup<C, B>(group: ReadGroup<C, B>): Promise<boolean> {
    group.lastTick = Date.now();
    const due = [...group.pollers]
      .map((poller) => ({ poller, ready: [...poller.subscribers].filter((s) => s.ready()) }))
      .filter((k) => k.ready.length > 0);
    if (due.length === 0) return false;
    const abort = new AbortController();
    group.abort = abort;
    for (const k of due) {
      k.poller.lastTick = group.lastTick;
      k.poller.abort = new AbortController();
    }
    this.polls += due.length;
    this.reads++;
    let result: TogetherRead<B>;
    try {
      // The account's organization is whose turn the statements take in the database's fair queues.
      result = await runAsTenant({ organizationId: group.organizationId }, () =>
        group.source.readTogether!(
          due.map((k) => ({
            query: k.poller.query,
            cursors: k.ready.map((s) => s.cursor),
            signal: k.poller.abort!.signal,
          })),
          abort.signal,
        ),
      );
    } catch (error) {
      if (!abort.signal.aborted)
        for (const k of due) if (!k.poller.abort!.signal.aborted) for (const s of k.ready) s.fail(error);
      return false;
    }
    for (const [i, k] of due.entries()) {
      const outcome = result.batches[i];
      if (outcome === undefined || k.poller.abort!.signal.aborted) continue;
      if ('error' in outcome) for (const s of k.ready) s.fail(outcome.error);
      else this.deliver(k.poller, k.ready, outcome.batch);
    }
    return result.more;
  }

  private schedule(key: string, poller: AnyPoller): void {
    clearTimeout(poller.timer);
    poller.timer = setTimeout(() => void this.tick(key, poller), this.intervalMs);
    poller.timer.unref?.();
  }

  /**
   * New events in a key's window, or written to a local account: deliver now rather than at the next interval
   * (woken reads of one key are at least WAKE_GAP_MS apart, however often it is woken).
   */
  private soon(key: string, poller: AnyPoller): void {
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
    for (const group of this.groups.values()) {
      if (group.accountId === accountId) this.groupSoon(group);
    }
    for (const [key, poller] of this.pollers) {
      if (poller.shared === undefined && poller.group === undefined && poller.query.account.id === accountId)
        this.soon(key, poller);
    }
  }

  private async tick(key: string, poller: AnyPoller): Promise<void> {
    if (poller.running || this.pollers.get(key) !== poller) return;
    poller.running = true;
    poller.again = false;
    try {
      await this.serve(poller);
    } finally {
      poller.running = false;
    }
    if (this.pollers.get(key) !== poller || poller.subscribers.size === 0) return;
    // Woken while reading: read again WAKE_GAP_MS after this read began, not back to back.
    if (poller.again) this.soon(key, poller);
    else this.schedule(key, poller);
  }

  private async serve<C, B>(poller: Poller<C, B>): Promise<void> {
    poller.lastTick = Date.now();
    const ready = [...poller.subscribers].filter((s) => s.ready());
    if (ready.length === 0) return;
    const live = poller.source.tailing;
    const shared = poller.shared;
    if (live.kind === 'live' && shared !== undefined) {
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

  private async read<C, B>(poller: Poller<C, B>, subscribers: Subscriber<C>[]): Promise<void> {
    poller.abort = new AbortController();
    try {
      this.polls++;
      this.reads++;
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

  private deliver<C, B>(poller: Poller<C, B>, subscribers: Subscriber<C>[], batch: B): void {
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

const sourceIds = new WeakMap<AnyStreamSource, number>();
let nextSourceId = 0;

/** A number per source object: keys of two sources (tests build several) are never read together. */
function sourceId(source: AnyStreamSource): number {
  let id = sourceIds.get(source);
  if (id === undefined) {
    id = nextSourceId++;
    sourceIds.set(source, id);
  }
  return id;
}
