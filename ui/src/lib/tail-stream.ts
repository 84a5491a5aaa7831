// One connection of a live tail (one group): connect, read, resume from the last id, back off, pause, stop.
// Internal to live-tail.ts. Every way out of a connection goes through halt(), which bumps `gen`: whatever an
// older connection still delivers or reports afterwards is ignored, so an id and its events are taken together
// or not at all (nothing lost, nothing repeated).
import { backoffDelay, type Backoff, retryAfterMs } from './retry-delay.js';
import { readSse, type SseMessage, SseTooLargeError } from './sse-reader.js';
import type { ApiError, TailEvent, TailGroup, TailStreamStatus, TailTimers } from './tail-types.js';

export interface StreamContext {
  url: string;
  token: string | null;
  fetch: typeof fetch;
  timers: TailTimers;
  random: () => number;
  backoff: Backoff;
  idleTimeoutMs: number;
  maxBufferSize: number | undefined;
  deliver(events: TailEvent[]): void;
  changed(): void;
}

const TERMINAL = new Set(['ended', 'error']);

const clientError = (code: string, message: string): ApiError => ({ code: `client:stream:${code}`, message });

export function streamUrl(baseUrl: string, group: TailGroup, startTime: number): string {
  const q = new URLSearchParams({ accountId: group.accountId, region: group.region, tail: 'true' });
  q.set('startTime', String(startTime));
  for (const g of group.logGroups) q.append('logGroups', g);
  if (group.logStreamPrefix !== undefined) q.set('logStreamPrefix', group.logStreamPrefix);
  for (const n of group.logStreamNames ?? []) q.append('logStreamNames', n);
  if (group.filterPattern) q.set('filterPattern', group.filterPattern);
  return `${baseUrl}/cloud/logs/stream?${q}`;
}

async function errorBody(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as ApiError;
    if (typeof body?.code === 'string' && typeof body.message === 'string') return body;
  } catch {
    // not the error object: described below
  }
  return clientError('http', `The server answered ${response.status} ${response.statusText}`.trim());
}

export class TailStream {
  status: TailStreamStatus = { state: 'connecting', attempt: 0 };
  private gen = 0;
  private connected = false;
  private controller: AbortController | undefined;
  private timer: unknown;
  private idle: unknown;
  private serverRetryMs: number | undefined;
  private errorEvent: ApiError | undefined;
  private lastId: string | undefined;

  constructor(private readonly ctx: StreamContext) {}

  /** Connects now (start, resume). */
  open(): void {
    if (TERMINAL.has(this.status.state)) return;
    this.halt();
    this.set({ attempt: 0 });
    void this.connect();
  }

  pause(): void {
    if (TERMINAL.has(this.status.state)) return;
    this.halt();
    this.set({ state: 'paused', error: undefined, httpStatus: undefined, retryInMs: undefined });
  }

  stop(): void {
    this.halt();
    if (!TERMINAL.has(this.status.state)) this.set({ state: 'ended', retryInMs: undefined });
  }

  private set(patch: Partial<TailStreamStatus>): void {
    this.status = { ...this.status, ...patch, lastEventId: this.lastId };
    this.ctx.changed();
  }

  private halt(): void {
    this.gen++;
    this.controller?.abort();
    this.controller = undefined;
    this.ctx.timers.clearTimeout(this.timer);
    this.ctx.timers.clearTimeout(this.idle);
  }

  private async connect(): Promise<void> {
    const gen = this.gen;
    const controller = new AbortController();
    this.controller = controller;
    const again = this.connected || this.status.attempt > 0;
    this.set({ state: again ? 'reconnecting' : 'connecting', retryInMs: undefined });
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.ctx.token !== null) headers.authorization = `Bearer ${this.ctx.token}`;
    if (this.lastId !== undefined) headers['last-event-id'] = this.lastId;
    let response: Response;
    try {
      response = await this.ctx.fetch(this.ctx.url, { headers, signal: controller.signal, cache: 'no-store' });
    } catch (error) {
      if (gen === this.gen) this.retry(clientError('network', String((error as Error)?.message ?? error)));
      return;
    }
    if (gen !== this.gen) return void response.body?.cancel().catch(() => undefined);
    if (!response.ok) return this.refused(response, gen);
    if (!/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) {
      response.body?.cancel().catch(() => undefined);
      return this.fail(clientError('not-an-event-stream', 'The server did not answer with an event stream'));
    }
    this.connected = true;
    this.errorEvent = undefined;
    this.set({ state: 'live', error: undefined, httpStatus: undefined });
    this.arm(gen);
    try {
      await readSse(response, (m) => this.message(m, gen), controller.signal, {
        maxBufferSize: this.ctx.maxBufferSize,
        onComment: () => this.activity(gen),
        onRetry: (ms) => {
          if (gen === this.gen) this.serverRetryMs = ms;
        },
      });
    } catch (error) {
      if (gen !== this.gen) return;
      this.halt();
      if (error instanceof SseTooLargeError) return this.fail(clientError('too-large', error.message));
      return this.retry(clientError('network', String((error as Error)?.message ?? error)));
    }
    // The server closed the connection without its final message: dropped.
    if (gen === this.gen) {
      this.halt();
      this.retry(undefined);
    }
  }

  private message(m: SseMessage, gen: number): void {
    if (gen !== this.gen) return;
    this.activity(gen);
    if (m.event === 'error') {
      this.errorEvent = parseError(m.data);
      return;
    }
    if (m.event !== undefined && m.event !== 'message') return;
    let payload: { events?: TailEvent[]; isFinal?: boolean };
    try {
      payload = JSON.parse(m.data);
    } catch {
      return;
    }
    if (m.id !== undefined) this.lastId = m.id;
    if (Array.isArray(payload.events) && payload.events.length > 0) this.ctx.deliver(payload.events);
    if (payload.isFinal === true && gen === this.gen) {
      this.halt();
      if (this.errorEvent !== undefined) this.fail(this.errorEvent);
      else this.set({ state: 'ended' });
    }
  }

  /** Anything from the server: the connection is alive and the failures in a row are over. */
  private activity(gen: number): void {
    if (gen !== this.gen) return;
    this.arm(gen);
    if (this.status.attempt !== 0) this.set({ attempt: 0 });
  }

  /** The idle watchdog: a connection silent for idleTimeoutMs (keep-alives come every 15 s) is dropped. */
  private arm(gen: number): void {
    this.ctx.timers.clearTimeout(this.idle);
    if (this.ctx.idleTimeoutMs <= 0) return;
    this.idle = this.ctx.timers.setTimeout(() => {
      if (gen !== this.gen) return;
      this.halt();
      this.retry(clientError('idle', `Nothing received for ${this.ctx.idleTimeoutMs} ms`));
    }, this.ctx.idleTimeoutMs);
  }

  private async refused(response: Response, gen: number): Promise<void> {
    const error = await errorBody(response);
    if (gen !== this.gen) return;
    if (response.status === 429 || response.status >= 500) {
      const wait = retryAfterMs(response.headers.get('retry-after'), Date.now());
      return this.retry(error, response.status, wait);
    }
    this.fail(error, response.status);
  }

  private retry(error: ApiError | undefined, httpStatus?: number, atLeastMs = 0): void {
    const { attempt } = this.status;
    const delay = Math.max(atLeastMs, backoffDelay(attempt, this.ctx.backoff, this.ctx.random, this.serverRetryMs));
    this.set({ state: 'reconnecting', error, httpStatus, retryInMs: delay, attempt: attempt + 1 });
    const gen = this.gen;
    this.timer = this.ctx.timers.setTimeout(() => {
      if (gen === this.gen) void this.connect();
    }, delay);
  }

  private fail(error: ApiError, httpStatus?: number): void {
    this.halt();
    this.set({ state: 'error', error, httpStatus, retryInMs: undefined });
  }
}

function parseError(data: string): ApiError {
  try {
    const body = JSON.parse(data) as ApiError;
    if (typeof body?.code === 'string') return body;
  } catch {
    // described below
  }
  return clientError('error-event', 'The stream reported an error');
}
