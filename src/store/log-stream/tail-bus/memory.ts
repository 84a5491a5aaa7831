import type { Logger } from '../../../core/logger.js';
import { type Batch, padSeq, Subscriptions } from './subscriptions.js';
import { BUS_START, type BusEntry, type Lease, type TailBus, type TailLeases } from './types.js';

const SEQ_DIGITS = 16;
const isMemorySeq = (seq: string) => /^\d{16}$/.test(seq);

interface Buffered extends BusEntry {
  at: number;
}

interface Ring {
  entries: Buffered[];
  /** The newest seq trimmed. */
  floor?: string;
}

/**
 * The bus of a single process (PGlite): a bounded buffer per key in memory, delivered in a microtask after each
 * publish (never inside `publish` or `subscribe`). Seqs are 16 digits, counted per bus.
 */
export class MemoryBus implements TailBus {
  readonly #subscriptions: Subscriptions;
  readonly #rings = new Map<string, Ring>();
  readonly #scheduled = new Set<string>();
  #last = 0;
  /** The newest floor of the rings forgotten: a new ring starts with it, so an old cursor still learns of its gap. */
  #forgotten: string | undefined;
  #closed = false;

  constructor(private readonly options: { bufferMs: number; bufferRows: number; log?: Logger }) {
    this.#subscriptions = new Subscriptions(
      {
        wake: (key) => {
          // "Now" is known at once here: the subscriber starts exactly at the call.
          this.#subscriptions.start(key, this.#newest(key) ?? BUS_START);
          this.#schedule(key);
        },
        log: options.log,
      },
      isMemorySeq,
    );
  }

  async publish(key: string, payload: unknown): Promise<string> {
    if (this.#closed) throw new Error('tail bus closed');
    // The same round trip as through a database: subscribers get JSON, never the publisher's object.
    const value: unknown = JSON.parse(JSON.stringify(payload ?? null));
    this.#last += 1;
    const seq = padSeq(this.#last, SEQ_DIGITS);
    let ring = this.#rings.get(key);
    if (ring === undefined) {
      ring = this.#forgotten === undefined ? { entries: [] } : { entries: [], floor: this.#forgotten };
      this.#rings.set(key, ring);
    }
    ring.entries.push({ seq, payload: value, at: Date.now() });
    this.#trim(key, ring);
    this.#schedule(key);
    return seq;
  }

  // The signature is the interface's: one place says what a subscriber is given.
  subscribe: TailBus['subscribe'] = (key, afterSeq, onEntries, onGap) => {
    if (this.#closed) return () => undefined;
    return this.#subscriptions.add(key, afterSeq, onEntries, onGap);
  };

  async latest(key: string): Promise<string | undefined> {
    return this.#newest(key);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#subscriptions.clear();
    this.#rings.clear();
  }

  #newest(key: string): string | undefined {
    return this.#rings.get(key)?.entries.at(-1)?.seq;
  }

  #schedule(key: string): void {
    if (this.#scheduled.has(key) || !this.#subscriptions.has(key)) return;
    this.#scheduled.add(key);
    queueMicrotask(() => {
      this.#scheduled.delete(key);
      this.#deliver(key);
    });
  }

  #deliver(key: string): void {
    for (;;) {
      if (this.#closed) return;
      const from = this.#subscriptions.from(key);
      if (from === undefined) return;
      const behind = this.#subscriptions.deliver(key, from, this.#read(key, from));
      if (!behind) return;
    }
  }

  #read(key: string, from: string): Batch {
    const ring = this.#rings.get(key);
    if (ring === undefined)
      return this.#forgotten === undefined ? { entries: [] } : { entries: [], floor: this.#forgotten };
    this.#trim(key, ring);
    const start = firstAfter(ring.entries, from);
    return {
      entries: ring.entries.slice(start).map(({ seq, payload }) => ({ seq, payload })),
      ...(ring.floor === undefined ? {} : { floor: ring.floor }),
    };
  }

  /** Drops what is past the row bound or older than the age bound; the newest seq dropped becomes the floor. */
  #trim(key: string, ring: Ring): void {
    const oldest = Date.now() - this.options.bufferMs;
    let drop = Math.max(0, ring.entries.length - this.options.bufferRows);
    while (drop < ring.entries.length && ring.entries[drop]!.at < oldest) drop += 1;
    if (drop === 0) return;
    ring.floor = ring.entries[drop - 1]!.seq;
    ring.entries.splice(0, drop);
    // A key nobody reads is forgotten once empty; its floor joins the one every new ring starts with.
    if (ring.entries.length === 0 && !this.#subscriptions.has(key)) {
      this.#rings.delete(key);
      if (this.#forgotten === undefined || ring.floor > this.#forgotten) this.#forgotten = ring.floor;
    }
  }
}

/** Index of the first entry whose seq is past `seq` (entries sorted by seq). */
function firstAfter(entries: BusEntry[], seq: string): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (entries[mid]!.seq > seq) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Leases of a single process: a key is held until released. */
export class MemoryLeases implements TailLeases {
  readonly #held = new Map<string, { lease: Lease; end: (reason: Error) => void }>();
  #closed = false;

  get held(): number {
    return this.#held.size;
  }

  async tryAcquire(key: string): Promise<Lease | undefined> {
    if (this.#closed || this.#held.has(key)) return undefined;
    const controller = new AbortController();
    const end = (reason: Error) => {
      if (this.#held.get(key)?.lease === lease) this.#held.delete(key);
      if (!controller.signal.aborted) controller.abort(reason);
    };
    const lease: Lease = {
      key,
      lost: controller.signal,
      release: async () => end(new Error('tail lease released')),
    };
    this.#held.set(key, { lease, end });
    return lease;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const { end } of [...this.#held.values()]) end(new Error('tail lease released'));
  }
}
