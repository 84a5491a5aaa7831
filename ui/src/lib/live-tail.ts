// The live tail of the log explorer: one GET /cloud/logs/stream per group (account and region), read with
// fetch (the bearer header cannot go through EventSource), resumed with Last-Event-ID after a drop or a pause.
// Framework-free: the page gives callbacks and renders what they say. Nothing is buffered here: each message's
// events go to onEvents and are forgotten; the only buffer is the parser's, bounded by maxBufferSize.
import { type Backoff, DEFAULT_BACKOFF } from './retry-delay.js';
import { streamUrl, TailStream } from './tail-stream.js';
import type { TailEvent, TailGroup, TailState, TailStatus, TailTimers } from './tail-types.js';

export type { ApiError, TailEvent, TailGroup, TailState, TailStatus, TailStreamStatus } from './tail-types.js';
export type { TailTimers };

export interface LiveTailOptions {
  /** One stream each, in this order (the groupIndex of onEvents). Give one group per (accountId, region). */
  groups: TailGroup[];
  /** The API token, sent as `Authorization: Bearer …`; null: the session cookie goes instead. */
  token: string | null;
  /** Where Berth is: '' (default) for the page's own origin. */
  baseUrl?: string;
  /** Epoch ms of the first event to show; default: the moment start() is called. */
  startTime?: number;
  /** Each message's events, in order, once each. */
  onEvents(events: TailEvent[], groupIndex: number): void;
  /** Every change of a stream's status; the object is new each time. */
  onState?(status: TailStatus): void;
  fetch?: typeof fetch;
  timers?: TailTimers;
  /** In [0, 1): the jitter's source. */
  random?: () => number;
  backoff?: Partial<Backoff>;
  /** A live connection that receives nothing (not even a keep-alive) this long is reconnected; 0: never. */
  idleTimeoutMs?: number;
  /** Characters one event may take while it is parsed (default 32 Mi); beyond, the stream ends in 'error'. */
  maxBufferSize?: number;
}

const RANK: TailState[] = ['error', 'reconnecting', 'connecting', 'paused', 'live', 'ended'];
let instances = 0;

export class LiveTail {
  private readonly streams: TailStream[] = [];
  private readonly tag = `tail${(++instances).toString(36)}`;
  private seq = 0;
  private started = false;
  private current: TailStatus = { state: 'connecting', streams: [] };

  constructor(private readonly options: LiveTailOptions) {}

  /** Opens the streams (once; later calls do nothing). */
  start(): void {
    if (this.started) return;
    this.started = true;
    const o = this.options;
    const startTime = o.startTime ?? Date.now();
    const timers = o.timers ?? {
      setTimeout: (callback: () => void, ms: number) => globalThis.setTimeout(callback, ms),
      clearTimeout: (handle: unknown) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
    };
    o.groups.forEach((group, index) => {
      const stream = new TailStream({
        url: streamUrl(o.baseUrl ?? '', group, startTime),
        token: o.token,
        fetch: o.fetch ?? ((input, init) => globalThis.fetch(input, init)),
        timers,
        random: o.random ?? Math.random,
        backoff: { ...DEFAULT_BACKOFF, ...o.backoff },
        idleTimeoutMs: o.idleTimeoutMs ?? 45_000,
        maxBufferSize: o.maxBufferSize,
        deliver: (events) => this.deliver(events, index),
        changed: () => this.changed(),
      });
      this.streams.push(stream);
    });
    this.changed();
    for (const s of this.streams) s.open();
  }

  /** Closes the connections; the streams remember their last id. Ended and failed streams stay so. */
  pause(): void {
    for (const s of this.streams) s.pause();
  }

  /** Reconnects paused streams from their last id: nothing missed during the pause is lost, nothing repeated. */
  resume(): void {
    for (const s of this.streams) if (s.status.state === 'paused') s.open();
  }

  /** Closes everything for good: every stream not already in 'error' becomes 'ended'. */
  stop(): void {
    for (const s of this.streams) s.stop();
  }

  get status(): TailStatus {
    return this.current;
  }

  get state(): TailState {
    return this.current.state;
  }

  private deliver(events: TailEvent[], groupIndex: number): void {
    for (const e of events) e.key = `${this.tag}.${groupIndex}.${++this.seq}`;
    try {
      this.options.onEvents(events, groupIndex);
    } catch (error) {
      // The page's bug, not the stream's: surface it without breaking the connection.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  private changed(): void {
    const streams = this.streams.map((s) => s.status);
    const states = new Set(streams.map((s) => s.state));
    const state = streams.length === 0 ? 'ended' : (RANK.find((r) => states.has(r)) ?? 'ended');
    const error = state === 'error' ? streams.find((s) => s.state === 'error')?.error : undefined;
    this.current = error === undefined ? { state, streams } : { state, error, streams };
    this.options.onState?.(this.current);
  }
}
