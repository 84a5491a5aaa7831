import { Redis } from 'ioredis';
import { type BackoffPolicy, backoffDelay } from '../../../core/backoff.js';
import type { Logger } from '../../../core/logger.js';
import { FailureLog } from './pg-pool.js';
import { type Batch, keyHash, padSeq, Subscriptions } from './subscriptions.js';
import { BUS_START, type BusEntry, type TailBus } from './types.js';

/**
 * Seqs here are `<n>:<stream id>`: `n` counts the key's entries (17 digits, it orders them), the stream id is where
 * to read from. Entries of a key are numbered without holes, so a read whose first entry is not the cursor's n + 1
 * found a gap (Redis trimmed what came between) — streams keep no trim mark a reader could compare.
 */
const N_DIGITS = 17;
const isRedisSeq = (seq: string) => /^\d{17}:\d+-\d+$/.test(seq);
const streamId = (seq: string) => (seq === BUS_START ? '0-0' : seq.slice(N_DIGITS + 1));
/** Entries per key per read. */
const READ_COUNT = 100;
/** A blocking read ends after this at the latest, so a changed key set is read even if its wake-up went astray. */
const BLOCK_MS = 1_000;
const COMMAND_TIMEOUT_MS = 2_000;
/** The blocking read, while it keeps failing. */
const READ_BACKOFF: BackoffPolicy = { baseMs: 200, maxMs: 2_000, jitter: 'none' };
/** A key's numbering outlives its entries by a day, so a subscriber coming back within it is told of its gap. */
const META_TTL_MS = 24 * 60 * 60 * 1_000;

/**
 * KEYS[1] the stream, KEYS[2] its numbering (hash: n, id); ARGV[1] payload, ARGV[2] rows kept, ARGV[3] ms kept,
 * ARGV[4] ms the numbering is kept.
 * Numbers the entry, appends it, trims by rows (MAXLEN) and by age (MINID, by Redis's clock like the ids), and
 * lets an idle stream expire once everything in it is well past the age bound (twice it: a reader a moment late
 * must still find the entries published just before the key went quiet). Exact trims, not `~`: in steady state each
 * publish drops about one entry either way, and a subscriber's gap is then exactly what the bounds say. A key numbered for the first time (or
 * forgotten) starts at the time in microseconds, above any number it had before: an old cursor sees the gap.
 * Numbers are formatted with %.0f: Lua's own conversion would round 16 digits.
 */
const PUBLISH_SCRIPT = `
local t = redis.call('TIME')
if redis.call('HEXISTS', KEYS[2], 'n') == 0 then
  redis.call('HSET', KEYS[2], 'n', t[1] .. string.format('%06d', tonumber(t[2])))
end
local n = string.format('%.0f', redis.call('HINCRBY', KEYS[2], 'n', 1))
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', 'n', n, 'p', ARGV[1])
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('XTRIM', KEYS[1], 'MINID', string.format('%.0f', nowMs - tonumber(ARGV[3])))
redis.call('HSET', KEYS[2], 'id', id)
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', 2 * tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {n, id}`;

interface PublishCommand {
  berthTailPublish(
    stream: string,
    meta: string,
    payload: string,
    rows: number,
    ms: number,
    metaMs: number,
  ): Promise<[string, string]>;
}

export interface RedisBusOptions {
  url: string;
  /** Prefix of every Redis key of the bus. */
  prefix: string;
  bufferMs: number;
  bufferRows: number;
  log?: Logger;
}

/**
 * The bus on Redis streams, one per key. Publishing is one script call; a dedicated connection runs XREAD BLOCK over
 * every key with subscribers here, from the lowest cursor of each, and is woken (CLIENT UNBLOCK) when that set
 * changes. While Redis is unreachable, publishes fail and reads pause; they resume from each subscriber's cursor.
 */
export class RedisBus implements TailBus {
  readonly #subscriptions: Subscriptions;
  readonly #commands: Redis;
  readonly #reader: Redis;
  /** The reader's connection id for CLIENT UNBLOCK; unknown after it reconnects. */
  #readerId: number | undefined;
  #blocking = false;
  #changed = false;
  #idle: (() => void) | undefined;
  #closed = false;
  readonly #loop: Promise<void>;
  readonly #failures: FailureLog;

  constructor(private readonly options: RedisBusOptions) {
    this.#failures = new FailureLog('tail bus: Redis', options.log);
    this.#subscriptions = new Subscriptions({ wake: () => this.#wake(), log: options.log }, isRedisSeq);
    const common = {
      protocol: 2 as const,
      connectTimeout: 2_000,
      retryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
      // A command in flight when the connection broke is failed, not sent again: a publish could be stored twice.
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 1,
    };
    this.#commands = new Redis(options.url, { ...common, commandTimeout: COMMAND_TIMEOUT_MS });
    this.#commands.defineCommand('berthTailPublish', { numberOfKeys: 2, lua: PUBLISH_SCRIPT });
    // The reader's timeout also covers a blocking read on a connection that went silent (it would wait forever).
    this.#reader = new Redis(options.url, { ...common, commandTimeout: BLOCK_MS + COMMAND_TIMEOUT_MS });
    for (const redis of [this.#commands, this.#reader]) redis.on('error', (error) => this.#failures.failed(error));
    this.#reader.on('ready', () => {
      this.#readerId = undefined;
    });
    this.#loop = this.#run();
  }

  async publish(key: string, payload: unknown): Promise<string> {
    if (this.#closed) throw new Error('tail bus closed');
    const hash = keyHash(key);
    const [n, id] = await (this.#commands as unknown as PublishCommand).berthTailPublish(
      this.#stream(hash),
      this.#meta(hash),
      JSON.stringify(payload ?? null),
      this.options.bufferRows,
      this.options.bufferMs,
      META_TTL_MS,
    );
    return `${padSeq(n, N_DIGITS)}:${id}`;
  }

  // The signature is the interface's: one place says what a subscriber is given.
  subscribe: TailBus['subscribe'] = (key, afterSeq, onEntries, onGap) => {
    if (this.#closed) return () => undefined;
    return this.#subscriptions.add(keyHash(key), afterSeq, onEntries, onGap);
  };

  latest(key: string): Promise<string | undefined> {
    return this.#latest(keyHash(key));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#subscriptions.clear();
    this.#idle?.();
    this.#reader.disconnect();
    await this.#loop;
    await this.#commands.quit().catch(() => this.#commands.disconnect());
  }

  #stream(hash: string): string {
    return `${this.options.prefix}${hash}`;
  }

  #meta(hash: string): string {
    return `${this.options.prefix}${hash}:n`;
  }

  async #latest(hash: string): Promise<string | undefined> {
    const [n, id] = await this.#commands.hmget(this.#meta(hash), 'n', 'id');
    return n && id ? `${padSeq(n, N_DIGITS)}:${id}` : undefined;
  }

  /** A subscriber was added: the blocking read must start over with the new key or the lower cursor. */
  #wake(): void {
    this.#changed = true;
    if (this.#idle !== undefined) this.#idle();
    else if (this.#blocking && this.#readerId !== undefined) {
      this.#commands.client('UNBLOCK', this.#readerId).catch(() => undefined);
    }
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#closed) {
      try {
        this.#changed = false;
        for (const hash of this.#subscriptions.hashes()) {
          if (this.#subscriptions.waiting(hash))
            this.#subscriptions.start(hash, (await this.#latest(hash)) ?? BUS_START);
        }
        const reads = this.#subscriptions.hashes().flatMap((hash) => {
          const from = this.#subscriptions.from(hash);
          return from === undefined ? [] : [{ hash, from }];
        });
        if (reads.length === 0) {
          await this.#pause();
          continue;
        }
        this.#readerId ??= await this.#reader.client('ID');
        if (this.#changed || this.#closed) continue;
        this.#blocking = true;
        const reply = await this.#reader
          .xread(
            'COUNT',
            READ_COUNT,
            'BLOCK',
            BLOCK_MS,
            'STREAMS',
            ...reads.map((r) => this.#stream(r.hash)),
            ...reads.map((r) => streamId(r.from)),
          )
          .finally(() => {
            this.#blocking = false;
          });
        failures = 0;
        this.#failures.succeeded();
        for (const [stream, items] of (reply ?? []) as Array<[string, Array<[string, string[]]>]>) {
          const read = reads.find((r) => this.#stream(r.hash) === stream);
          if (read !== undefined && !this.#closed) this.#subscriptions.deliver(read.hash, read.from, toBatch(items));
        }
      } catch (error) {
        if (this.#closed) break;
        this.#failures.failed(error);
        // A read that timed out may sit on a connection that went silent: start a new one.
        if (error instanceof Error && error.message.includes('timed out')) this.#reader.disconnect(true);
        failures += 1;
        await this.#pause(backoffDelay(failures, READ_BACKOFF));
      }
    }
  }

  /** Until a subscriber is added or the bus closes (or `ms` passes). */
  async #pause(ms?: number): Promise<void> {
    if (this.#closed) return;
    await new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(resolve, ms);
      this.#idle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#idle = undefined;
  }
}

/** Entries of one stream as read after `from`, with the floor that tells a cursor it missed entries. */
function toBatch(items: Array<[string, string[]]>): Batch {
  const entries: BusEntry[] = [];
  let firstN: bigint | undefined;
  for (const [id, fields] of items) {
    const n = field(fields, 'n');
    const payload = field(fields, 'p');
    if (n === undefined || payload === undefined) continue;
    firstN ??= BigInt(n);
    try {
      entries.push({ seq: `${padSeq(n, N_DIGITS)}:${id}`, payload: JSON.parse(payload) });
    } catch {
      // Not written by this bus: nothing to deliver.
    }
  }
  const batch: Batch = { entries };
  // Numbers have no holes: whatever came before the first entry read and after `from` was trimmed. Said for every
  // cursor, not only `from`: subscribers past it read this batch too.
  if (firstN !== undefined && firstN > 1n) batch.floor = padSeq(firstN - 1n, N_DIGITS);
  return batch;
}

function field(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
