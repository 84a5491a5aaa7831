import { RoundRobin } from './round-robin.js';

/**
 * A bound on concurrent work shared fairly: at most `max` run at once, at most `perGroup` of one group
 * (an organization) and `perMember` of one member (a principal) within a group: a member of several groups has a
 * share in each, and its work in one never uses up its share in another. Waiting work is served round-robin
 * across groups, so a group with a thousand waiting items and a group with one take turns. Within a group, work
 * of different flows (a member's distinct requests) takes turns too, and work of one flow (the same request sent
 * many times at once) is served first come first served; work without a flow is one line of its group. A line
 * or group whose work gave up waiting may keep its place for a while (`keepPlaceMs`), so work that is refused
 * and sent again is not always served after work that never left. Used for heavy work (log queries, history
 * reads, ingest) and for the database's connections.
 */
export interface FairLimits {
  max: number;
  perGroup?: number;
  perMember?: number;
}

export interface FairQueueOptions {
  /**
   * How long a line (and a group) whose waiting work all gave up (timed out or aborted) keeps its place in the
   * round: work of it that comes back within this time (a client retrying after its 429) waits where the line
   * was, not behind every line that never left. 0 (the default): it leaves at once and joins at the back.
   */
  keepPlaceMs?: number;
}

export interface FairClaim {
  /** Whose share the work is counted in (an organization, or another tenant key). */
  group: string;
  /** Within the group, whose (a principal), counted in this group only; omitted: only the group's share applies. */
  member?: string;
  /**
   * Within the member, which request this is (an operation and its parameters): waiting work of different flows
   * takes turns, so a request repeated many times at once does not hold back the member's other requests.
   * Omitted: the work waits in its group's common line.
   */
  flow?: string;
  /**
   * The next step of work already under way (a stream's next history batch): its lines are offered the group's
   * turn before the lines of new work, so a step waits for the next free slot, never behind new requests.
   */
  continuing?: boolean;
}

export type Release = () => void;

export interface AcquireOptions {
  /** Leaves the queue when it fires, rejected with its reason. */
  signal?: AbortSignal;
  /** Gives up waiting after this long, rejected with {@link QueueTimeoutError}; omitted: waits until served. */
  timeoutMs?: number;
}

/** The work could not start within the time it may wait. */
export class QueueTimeoutError extends Error {
  override name = 'QueueTimeoutError';
  constructor(
    readonly waitedMs: number,
    /** Which share was full when the wait ended: `process`, `group` or `member`. */
    readonly share: 'process' | 'group' | 'member',
  ) {
    super(`the work could not start within ${waitedMs} ms (the ${share} share is in use)`);
  }
}

interface Waiter {
  claim: FairClaim;
  /** The line it waits in within its group (`lineKey`). */
  line: string;
  grant: (release: Release) => void;
  settled: boolean;
}

interface Group {
  running: number;
  /** Waiting work in all its lines. */
  waiting: number;
  /** Waiting work by line, first come first. */
  lines: Map<string, Waiter[]>;
  /** Lines of new work with waiting work, taking turns. */
  turns: RoundRobin<string>;
  /** Lines of continuing work with waiting work, taking turns; offered the group's turn first. */
  continuing: RoundRobin<string>;
  /** Until when (Date.now()) lines of it that gave up keep their places: the group is kept that long when idle. */
  keepUntil: number;
}

export class FairQueue {
  readonly #limits: Required<FairLimits>;
  readonly #groups = new Map<string, Group>();
  /** Running work by member within its group (`memberKey`). */
  readonly #members = new Map<string, number>();
  /** Groups with waiting work, taking turns. */
  readonly #round = new RoundRobin<string>();
  readonly #keepPlaceMs: number;
  /** When idle groups are next looked over (`#sweep`). */
  #sweepAt = 0;
  #running = 0;
  #waiting = 0;

  constructor(limits: FairLimits, options: FairQueueOptions = {}) {
    this.#keepPlaceMs = Math.max(0, options.keepPlaceMs ?? 0);
    const max = Math.max(1, limits.max);
    this.#limits = {
      max,
      perGroup: Math.max(1, Math.min(limits.perGroup ?? max, max)),
      perMember: Math.max(1, Math.min(limits.perMember ?? max, max)),
    };
  }

  get limits(): Readonly<Required<FairLimits>> {
    return this.#limits;
  }

  /** Work running now. */
  get running(): number {
    return this.#running;
  }

  /** Work waiting for a turn. */
  get waiting(): number {
    return this.#waiting;
  }

  runningIn(group: string): number {
    return this.#groups.get(group)?.running ?? 0;
  }

  /** Takes a slot now if every share allows it and nobody of the same group waits; else undefined. */
  tryAcquire(claim: FairClaim): Release | undefined {
    const group = this.#groups.get(claim.group);
    if (group !== undefined && group.waiting > 0) return undefined;
    if (this.#fullShare(claim) !== undefined) return undefined;
    return this.#start(claim);
  }

  /** A slot for `claim`, once its turn comes. Call the release exactly once when the work is over. */
  acquire(claim: FairClaim, options: AcquireOptions = {}): Promise<Release> {
    const now = this.tryAcquire(claim);
    if (now !== undefined) return Promise.resolve(now);
    const { signal, timeoutMs } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Release>((resolve, reject) => {
      const started = Date.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        claim,
        line: lineKey(claim),
        settled: false,
        grant: (release) => {
          cleanup();
          resolve(release);
        },
      };
      const leave = (error: unknown) => {
        if (waiter.settled) return;
        waiter.settled = true;
        this.#remove(waiter);
        cleanup();
        reject(error);
      };
      const onAbort = () => leave(signal?.reason);
      const cleanup = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => leave(new QueueTimeoutError(Date.now() - started, this.#fullShare(claim) ?? 'process')),
          Math.max(0, timeoutMs),
        );
      }
      this.#enqueue(waiter);
    });
  }

  /** Runs `work` in a slot; the slot is held until `work` settles (even past an abort of the caller). */
  async run<T>(claim: FairClaim, options: AcquireOptions, work: () => Promise<T>): Promise<T> {
    const release = await this.acquire(claim, options);
    try {
      return await work();
    } finally {
      release();
    }
  }

  #fullShare(claim: FairClaim): 'process' | 'group' | 'member' | undefined {
    if (this.#running >= this.#limits.max) return 'process';
    if ((this.#groups.get(claim.group)?.running ?? 0) >= this.#limits.perGroup) return 'group';
    if (claim.member !== undefined && (this.#members.get(memberKey(claim)) ?? 0) >= this.#limits.perMember)
      return 'member';
    return undefined;
  }

  #groupOf(name: string): Group {
    let group = this.#groups.get(name);
    if (group === undefined) {
      group = {
        running: 0,
        waiting: 0,
        lines: new Map(),
        turns: new RoundRobin(),
        continuing: new RoundRobin(),
        keepUntil: 0,
      };
      this.#groups.set(name, group);
    }
    return group;
  }

  #start(claim: FairClaim): Release {
    const group = this.#groupOf(claim.group);
    group.running += 1;
    this.#running += 1;
    if (claim.member !== undefined) {
      const key = memberKey(claim);
      this.#members.set(key, (this.#members.get(key) ?? 0) + 1);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      group.running -= 1;
      this.#running -= 1;
      if (claim.member !== undefined) {
        const key = memberKey(claim);
        const n = (this.#members.get(key) ?? 1) - 1;
        if (n <= 0) this.#members.delete(key);
        else this.#members.set(key, n);
      }
      this.#forget(claim.group, group);
      this.#sweep();
      this.#dispatch();
    };
  }

  #enqueue(waiter: Waiter): void {
    const group = this.#groupOf(waiter.claim.group);
    if (group.waiting === 0) this.#round.join(waiter.claim.group);
    let line = group.lines.get(waiter.line);
    if (line === undefined) {
      line = [];
      group.lines.set(waiter.line, line);
      roundOf(group, waiter.claim).join(waiter.line);
    }
    line.push(waiter);
    group.waiting += 1;
    this.#waiting += 1;
  }

  /**
   * Takes `waiter` (at `at` in its line) out of its group's waiting work: served, or it gave up (then its line and
   * group keep their places for `keepPlaceMs` when they have nothing else waiting).
   */
  #unqueue(name: string, group: Group, line: Waiter[], at: number, gaveUp: boolean): void {
    const [waiter] = line.splice(at, 1);
    const keepUntil = gaveUp && this.#keepPlaceMs > 0 ? Date.now() + this.#keepPlaceMs : undefined;
    if (keepUntil !== undefined) {
      group.keepUntil = keepUntil;
      this.#sweep();
    }
    const out = (round: RoundRobin<string>, key: string) =>
      keepUntil === undefined ? round.leave(key) : round.park(key, keepUntil);
    if (line.length === 0) {
      group.lines.delete(waiter!.line);
      out(roundOf(group, waiter!.claim), waiter!.line);
    }
    group.waiting -= 1;
    this.#waiting -= 1;
    if (group.waiting === 0) out(this.#round, name);
  }

  #remove(waiter: Waiter): void {
    const group = this.#groups.get(waiter.claim.group);
    const line = group?.lines.get(waiter.line);
    if (group === undefined || line === undefined) return;
    const at = line.indexOf(waiter);
    if (at < 0) return;
    this.#unqueue(waiter.claim.group, group, line, at, true);
    this.#forget(waiter.claim.group, group);
    // A waiter that leaves may have blocked others of its group behind a full member share.
    this.#dispatch();
  }

  #forget(name: string, group: Group): void {
    if (group.running === 0 && group.waiting === 0 && group.keepUntil <= Date.now()) this.#groups.delete(name);
  }

  /** Forgets idle groups whose kept places have expired (at most once per `keepPlaceMs`; never without it). */
  #sweep(): void {
    if (this.#keepPlaceMs === 0) return;
    const now = Date.now();
    if (now < this.#sweepAt) return;
    this.#sweepAt = now + this.#keepPlaceMs;
    for (const [name, group] of this.#groups) this.#forget(name, group);
  }

  /** Starts waiting work while slots are free, one group per turn and, within it, one line per turn. */
  #dispatch(): void {
    while (this.#running < this.#limits.max) {
      // A group takes its turn with the first waiter every share allows, in the first line that has one.
      const served = this.#round.next((name) => {
        const group = this.#groups.get(name)!;
        if (group.running >= this.#limits.perGroup) return undefined;
        const take = (key: string) => {
          const line = group.lines.get(key)!;
          const at = line.findIndex((w) => this.#fullShare(w.claim) === undefined);
          return at < 0 ? undefined : { name, group, line, at };
        };
        return group.continuing.next(take) ?? group.turns.next(take);
      });
      if (served === undefined) return;
      const { name, group, line, at } = served;
      const waiter = line[at]!;
      this.#unqueue(name, group, line, at, false);
      waiter.settled = true;
      const release = this.#start(waiter.claim);
      waiter.grant(release);
    }
  }
}

/** A member within its group (ids are printable: U+0000 separates them unambiguously). */
function memberKey(claim: FairClaim): string {
  return `${claim.group}\u0000${claim.member}`;
}

/**
 * A flow's line within its group: one per member and flow; work without a flow shares its group's one line
 * (continuing work its own one).
 */
function lineKey(claim: FairClaim): string {
  const kind = claim.continuing === true ? '+' : '';
  return claim.flow === undefined ? kind : `${kind}${claim.member ?? ''}\u0000${claim.flow}`;
}

function roundOf(group: Group, claim: FairClaim): RoundRobin<string> {
  return claim.continuing === true ? group.continuing : group.turns;
}
