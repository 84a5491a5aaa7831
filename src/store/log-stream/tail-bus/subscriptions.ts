import { createHash } from 'node:crypto';
import type { Logger } from '../../../core/logger.js';
import { BUS_START, type BusEntry } from './types.js';

/** A key's storage name: bounded length whatever the key, and no key text in the database or Redis. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}

/** `digits` decimal digits, zero-padded: such seqs compare as strings the way their numbers do. */
export function padSeq(value: string | bigint | number, digits: number): string {
  return String(value).padStart(digits, '0');
}

/** What one read of a key returned. */
export interface Batch {
  /** Entries after the cursor the read started from, oldest first. */
  entries: BusEntry[];
  /**
   * Entries at or below this seq may have been trimmed: a subscriber whose cursor is below it has missed some.
   * It must be a cursor the backend can read from, unless the batch holds entries past it.
   */
  floor?: string;
}

interface Subscriber {
  /** The last seq delivered (or where it starts); undefined until the bus knows where "now" is. */
  cursor: string | undefined;
  readonly onEntries: (entries: BusEntry[]) => void;
  readonly onGap: () => void;
  active: boolean;
}

export interface SubscriptionHooks {
  /** A subscriber was added to the key (it needs a start or a replay): read the key soon. */
  wake(keyHash: string): void;
  log?: Logger;
}

/**
 * The subscribers of one process, by key hash, and the delivery rule every backend shares: a read starts after the
 * lowest cursor of the key's subscribers (`from`); each subscriber at or past `from` takes the entries past its own
 * cursor, so nothing is delivered twice or out of order; one below `from` (added while the read ran) waits for a
 * read from its own cursor.
 */
export class Subscriptions {
  readonly #keys = new Map<string, Set<Subscriber>>();

  constructor(
    private readonly hooks: SubscriptionHooks,
    /** Whether `seq` has the shape of the backend's seqs. */
    private readonly isSeq: (seq: string) => boolean,
  ) {}

  add(
    keyHash: string,
    afterSeq: string | undefined,
    onEntries: (entries: BusEntry[]) => void,
    onGap: () => void,
  ): () => void {
    const valid = afterSeq === undefined || afterSeq === BUS_START || this.isSeq(afterSeq);
    const subscriber: Subscriber = { cursor: valid ? afterSeq : BUS_START, onEntries, onGap, active: true };
    let subscribers = this.#keys.get(keyHash);
    if (subscribers === undefined) {
      subscribers = new Set();
      this.#keys.set(keyHash, subscribers);
    }
    subscribers.add(subscriber);
    // A seq this bus never issues: nothing can be found after it, so the subscriber refills and starts over.
    // Queued before the wake, so it comes before any delivery.
    if (!valid) queueMicrotask(() => subscriber.active && this.#call(subscriber.onGap));
    this.hooks.wake(keyHash);
    const set = subscribers;
    return () => {
      if (!subscriber.active) return;
      subscriber.active = false;
      set.delete(subscriber);
      if (set.size === 0 && this.#keys.get(keyHash) === set) this.#keys.delete(keyHash);
    };
  }

  /** Keys with subscribers. */
  hashes(): string[] {
    return [...this.#keys.keys()];
  }

  has(keyHash: string): boolean {
    return this.#keys.has(keyHash);
  }

  /** Whether some subscriber of the key waits to learn where "now" is (`start`). */
  waiting(keyHash: string): boolean {
    for (const s of this.#keys.get(keyHash) ?? []) if (s.cursor === undefined) return true;
    return false;
  }

  /** Subscribers waiting for "now" start after `cursor` (the key's newest seq, or BUS_START when it has none). */
  start(keyHash: string, cursor: string): void {
    for (const s of this.#keys.get(keyHash) ?? []) if (s.cursor === undefined) s.cursor = cursor;
  }

  /** Where the key's next read starts: the lowest cursor of its started subscribers. */
  from(keyHash: string): string | undefined {
    let lowest: string | undefined;
    for (const s of this.#keys.get(keyHash) ?? []) {
      if (s.cursor !== undefined && (lowest === undefined || s.cursor < lowest)) lowest = s.cursor;
    }
    return lowest;
  }

  /**
   * Hands a read of the key that started after `from` to its subscribers. Returns true when a subscriber is below
   * `from` (it needs a read of its own).
   */
  deliver(keyHash: string, from: string, batch: Batch): boolean {
    let behind = false;
    for (const s of [...(this.#keys.get(keyHash) ?? [])]) {
      if (!s.active || s.cursor === undefined) continue;
      if (s.cursor < from) {
        behind = true;
        continue;
      }
      let cursor = s.cursor;
      if (batch.floor !== undefined && batch.floor > cursor) {
        // BUS_START asked for what is kept: what was trimmed before is no gap.
        if (cursor !== BUS_START) this.#call(s.onGap);
        cursor = batch.floor;
      }
      const fresh = batch.entries.filter((e) => e.seq > cursor);
      s.cursor = fresh.at(-1)?.seq ?? cursor;
      if (fresh.length > 0 && s.active) this.#call(() => s.onEntries(fresh));
    }
    return behind;
  }

  /** Stops every delivery (the bus is closing). */
  clear(): void {
    for (const subscribers of this.#keys.values()) for (const s of subscribers) s.active = false;
    this.#keys.clear();
  }

  #call(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      // One failing subscriber must not keep the entries from the others.
      this.hooks.log?.error({ err: error }, 'tail bus: a subscriber threw');
    }
  }
}
