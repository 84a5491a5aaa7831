import { createHash } from 'node:crypto';
import { deriveLevel } from './log-level.js';

/**
 * The live tail of one key as a replica holds it: the recent events of the upstream, each once, with the
 * positions the subscribers' cursors are checked against (see docs/decisions.md, "Live tail on aws").
 *
 * Live Tail events carry no `eventId`, and the same event also comes back from the FilterLogEvents reads that
 * fill the seams. So an event is known by what it is — (group, stream, timestamp, ingestionTime, message) — and
 * identical events are told apart by their count: the k-th copy of a content is `hash.k`. Counting is a
 * multiset merge in which every source gives a lower bound of the true count: a complete read of a time range
 * gives its count, a Live Tail session gives what the window knew when the session began plus what the session
 * delivered. The window takes the highest; it never holds more copies than were written.
 */

/** An event as the upstream gave it, with its group (the name the query used, not an ARN). */
export interface RawTailEvent {
  logGroup: string;
  logStreamName: string;
  message: string;
  timestamp: number;
  ingestionTime: number;
}

/**
 * An event of the window: `eventId` is `hash.k`; `level` derived from the message; `seq` the bus entry that
 * published it (none yet: the holder read it and its message is not stored yet — it is not delivered before).
 */
export interface TailEvent extends RawTailEvent {
  eventId: string;
  level: string;
  seq?: string;
}

/** The content key of an event: 16 base64url characters (96 bits) of a SHA-256. */
export function tailEventHash(e: RawTailEvent): string {
  return createHash('sha256')
    .update(JSON.stringify([e.logGroup, e.logStreamName, e.timestamp, e.ingestionTime, e.message]))
    .digest('base64url')
    .slice(0, 16);
}

/** Numbers the copies of each content within one complete read, in the order given. */
export function numberCopies<E extends RawTailEvent>(events: E[]): (E & { eventId: string })[] {
  const counts = new Map<string, number>();
  return events.map((e) => {
    const hash = tailEventHash(e);
    const k = counts.get(hash) ?? 0;
    counts.set(hash, k + 1);
    return { ...e, eventId: `${hash}.${k}` };
  });
}

const byKey = (a: TailEvent, b: TailEvent) =>
  a.timestamp - b.timestamp || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

/** What a Live Tail session knew at its start: counts are lower bounds only with it. */
export interface LiveSession {
  readonly base: ReadonlyMap<string, number>;
  readonly delivered: Map<string, number>;
}

export class TailWindow {
  /** Every event with a timestamp at or after this is here (if it was ingested within the lookback). */
  complete = Number.POSITIVE_INFINITY;
  /** The newest time the upstream has answered for: events before it that exist are here or still on their way. */
  coveredTo = Number.NEGATIVE_INFINITY;
  /**
   * Every published event from this timestamp on is still here (events before it were pruned, or — Infinity —
   * bus entries were missed): what `delivered` can rebuild exactly. Unlike `complete`, a gap upstream leaves it.
   */
  heldFrom = Number.NEGATIVE_INFINITY;
  /** `coveredTo` of the newest bus entry applied, and that entry's seq: what subscribers may be given. */
  published = Number.NEGATIVE_INFINITY;
  appliedSeq: string | undefined;
  readonly #byId = new Map<string, TailEvent>();
  readonly #counts = new Map<string, number>();
  /** Oldest first by (timestamp, eventId). */
  #events: TailEvent[] = [];

  get size(): number {
    return this.#events.length;
  }

  has(eventId: string): boolean {
    return this.#byId.has(eventId);
  }

  /**
   * Adds the events of a complete read of `[from, to]` that the window lacks, and returns them (with ids).
   * Events below the window's pruning horizon are ignored: their counts are gone.
   */
  fill(events: RawTailEvent[], horizon = Number.NEGATIVE_INFINITY): TailEvent[] {
    const counts = new Map<string, { n: number; sample: RawTailEvent }>();
    for (const e of events) {
      if (e.timestamp < horizon) continue;
      const hash = tailEventHash(e);
      const c = counts.get(hash);
      if (c === undefined) counts.set(hash, { n: 1, sample: e });
      else c.n++;
    }
    const added: TailEvent[] = [];
    for (const [hash, { n, sample }] of counts) this.#raise(hash, n, sample, added);
    added.sort(byKey);
    return added;
  }

  /** Begins a Live Tail session: what the window holds now is what the session's counts build on. */
  session(): LiveSession {
    return { base: new Map(this.#counts), delivered: new Map() };
  }

  /** Adds the events a Live Tail session delivered that the window lacks, and returns them. */
  live(session: LiveSession, events: RawTailEvent[]): TailEvent[] {
    const added: TailEvent[] = [];
    for (const e of events) {
      const hash = tailEventHash(e);
      const delivered = (session.delivered.get(hash) ?? 0) + 1;
      session.delivered.set(hash, delivered);
      this.#raise(hash, (session.base.get(hash) ?? 0) + delivered, e, added);
    }
    added.sort(byKey);
    return added;
  }

  /**
   * Applies a bus entry: adds its events (ids given by the holder) that the window lacks, marks them all as
   * published by `seq`, and returns those it lacked.
   */
  apply(events: TailEvent[], seq?: string, coveredTo?: number): TailEvent[] {
    const added: TailEvent[] = [];
    if (seq !== undefined && (this.appliedSeq === undefined || seq > this.appliedSeq)) this.appliedSeq = seq;
    if (coveredTo !== undefined && coveredTo > this.published) this.published = coveredTo;
    for (const given of events) {
      const known = this.#byId.get(given.eventId);
      if (known !== undefined) {
        known.seq ??= seq;
        continue;
      }
      const e = seq === undefined ? given : { ...given, seq };
      const dot = e.eventId.lastIndexOf('.');
      const hash = e.eventId.slice(0, dot);
      const k = Number(e.eventId.slice(dot + 1));
      this.#counts.set(hash, Math.max(this.#counts.get(hash) ?? 0, k + 1));
      this.#insert(e);
      added.push(e);
    }
    return added;
  }

  /** Raises the count of `hash` to `n`, adding the copies between. */
  #raise(hash: string, n: number, sample: RawTailEvent, added: TailEvent[]): void {
    const have = this.#counts.get(hash) ?? 0;
    for (let k = have; k < n; k++) {
      const event: TailEvent = {
        logGroup: sample.logGroup,
        logStreamName: sample.logStreamName,
        message: sample.message,
        timestamp: sample.timestamp,
        ingestionTime: sample.ingestionTime,
        eventId: `${hash}.${k}`,
        level: deriveLevel(sample.message),
      };
      this.#insert(event);
      added.push(event);
    }
    if (n > have) this.#counts.set(hash, n);
  }

  #insert(e: TailEvent): void {
    this.#byId.set(e.eventId, e);
    const events = this.#events;
    // Mostly in order: search from the end.
    let at = events.length;
    while (at > 0 && byKey(events[at - 1]!, e) > 0) at--;
    if (at === events.length) events.push(e);
    else events.splice(at, 0, e);
  }

  /**
   * Forgets events never published (a holder that lost its lease before their entry was stored): a later holder,
   * here or elsewhere, reads them again.
   */
  dropUnpublished(): void {
    const keep: TailEvent[] = [];
    for (const e of this.#events) {
      if (e.seq !== undefined) {
        keep.push(e);
        continue;
      }
      this.#byId.delete(e.eventId);
      const hash = e.eventId.slice(0, e.eventId.lastIndexOf('.'));
      const n = (this.#counts.get(hash) ?? 1) - 1;
      if (n > 0) this.#counts.set(hash, n);
      else this.#counts.delete(hash);
    }
    this.#events = keep;
  }

  /** Forgets events before `horizon`; the window then vouches for nothing before it. */
  prune(horizon: number): void {
    // (Infinity, a window not complete anywhere yet, stays so.)
    this.complete = Math.max(this.complete, horizon);
    this.heldFrom = Math.max(this.heldFrom, horizon);
    const events = this.#events;
    let cut = 0;
    while (cut < events.length && events[cut]!.timestamp < horizon) cut++;
    if (cut === 0) return;
    for (const e of events.slice(0, cut)) {
      this.#byId.delete(e.eventId);
      this.#counts.delete(e.eventId.slice(0, e.eventId.lastIndexOf('.')));
    }
    this.#events = events.slice(cut);
  }

  /** The events with a timestamp at or after `from`, oldest first (a copy). */
  since(from: number): TailEvent[] {
    const events = this.#events;
    let lo = 0;
    let hi = events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (events[mid]!.timestamp < from) lo = mid + 1;
      else hi = mid;
    }
    return events.slice(lo);
  }

  /** Looks an event up by id. */
  get(eventId: string): TailEvent | undefined {
    return this.#byId.get(eventId);
  }

  /**
   * The ids a subscriber was given by the time it saw entry `seq` with positions up to `coveredTo`: every published
   * event from `from` (its floor then) below `coveredTo`, by entries up to `seq`, and before `hold` when it stopped
   * part-way. Exact while the window holds every published event from `from` on (`heldFrom ≤ from`).
   */
  delivered(from: number, coveredTo: number, seq: string, hold?: [number, string]): [number, string][] {
    const out: [number, string][] = [];
    for (const e of this.since(from)) {
      if (e.timestamp >= coveredTo) break;
      if (e.seq === undefined || e.seq > seq) continue;
      if (hold !== undefined && (e.timestamp > hold[0] || (e.timestamp === hold[0] && e.eventId >= hold[1]))) continue;
      out.push([e.timestamp, e.eventId]);
    }
    return out;
  }
}
