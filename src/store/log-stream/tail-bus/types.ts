/**
 * One published entry. `seq` is ordered per key as a plain string: of two seqs of one key, the later entry's
 * compares greater (`a > b`), on every backend (fixed-width digits). Seqs of different keys are unrelated.
 */
export interface BusEntry {
  seq: string;
  /** The published value after a JSON round trip (shared by every subscriber of this process: do not mutate). */
  payload: unknown;
}

export interface TailBus {
  /**
   * Publishes on `key` (any string). Resolves with the entry's seq once stored; rejects when it was not stored
   * (database or Redis unreachable: the caller decides whether to retry).
   */
  publish(key: string, payload: unknown): Promise<string>;
  /**
   * Entries of `key` after `afterSeq`, oldest first, then each new one as it comes, in order, none twice.
   * `afterSeq`: undefined starts at the newest entry when the bus first reads the key (a round trip after the call on
   * PostgreSQL and Redis; use `latest()` for an exact point); `BUS_START` (`''`) means every entry still buffered,
   * never a gap. `onGap()` is called when entries after `afterSeq` were already trimmed from the buffer (or
   * `afterSeq` is no seq this bus issues): the subscriber must refill from the upstream itself; delivery then
   * continues from the oldest kept. Callbacks run synchronously in the bus's delivery; an exception is logged and
   * dropped. Returns the unsubscribe.
   */
  subscribe(
    key: string,
    afterSeq: string | undefined,
    onEntries: (entries: BusEntry[]) => void,
    onGap: () => void,
  ): () => void;
  /** The newest seq of key, if any: `subscribe(key, (await latest(key)) ?? BUS_START, …)` misses nothing after it. */
  latest(key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

export interface Lease {
  readonly key: string;
  /** Aborted when the lease is lost (renewal failed until it ran out, or the row was taken or expired) or released. */
  readonly lost: AbortSignal;
  /** Gives the key up (the next `tryAcquire` anywhere gets it). Safe to call twice; never rejects. */
  release(): Promise<void>;
}

export interface TailLeases {
  /**
   * Becomes the holder of key unless a live holder has it (this process included). Renewed automatically every
   * ttl/3 while held. Resolves undefined when the database cannot be asked (an outage is not an error here: the
   * caller tries again later).
   */
  tryAcquire(key: string): Promise<Lease | undefined>;
  /** Holders this process has now (metrics). */
  readonly held: number;
  /** Releases every lease held. */
  close(): Promise<void>;
}

/** As `afterSeq`: every entry still buffered, without a gap (it sorts before every seq). */
export const BUS_START = '';
