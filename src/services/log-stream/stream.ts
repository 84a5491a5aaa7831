import { Readable } from 'node:stream';
import { AppError, appError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { MAX_TIME_MS } from '../../core/log-time.js';
import type { AnyStreamSource, HistoryCursor, StreamEvent, StreamQuery } from '../../providers/log-stream/port.js';
import { encodeEventId, type ResumePoint } from './resume-id.js';
import type { TailHub } from './tail-hub.js';

/** One log event as the stream sends it. */
export interface WireEvent {
  logStreamName: string;
  message: string;
  /** ISO 8601 UTC with milliseconds */
  timestamp: string;
  /** ISO 8601 UTC with milliseconds */
  ingestionTime: string;
  level: string;
}

/** What a log stream yields, in order; `http/` frames each one as server-sent events. */
export type LogStreamEvent =
  /** Events, and the id that resumes right after the last of them. */
  | { kind: 'events'; id: string; events: WireEvent[] }
  /** Nothing else waits to be sent: a sign of life for the client and the proxies between. */
  | { kind: 'keep-alive' }
  /** The stream failed after it started; `final` follows. */
  | { kind: 'error'; error: AppError }
  /** The last event: where a reconnect would resume. Nothing follows. */
  | { kind: 'final'; id: string };

/**
 * A stored time as ISO 8601 UTC with milliseconds. The API takes times up to MAX_TIME_MS only, but a row written
 * below it (an older version, a manual insert) may hold any bigint: `new Date(ms).toISOString()` throws past
 * ±8.64e15 and writes a six-digit year past 9999. Such a time is sent as the nearest one in range rather than
 * failing the stream or breaking the wire format.
 */
export function wireTime(ms: number): string {
  return new Date(Number.isNaN(ms) ? 0 : Math.min(Math.max(Math.trunc(ms), 0), MAX_TIME_MS)).toISOString();
}

const wire = (e: StreamEvent): WireEvent => ({
  logStreamName: e.logStreamName,
  message: e.message,
  timestamp: wireTime(e.timestamp),
  ingestionTime: wireTime(e.ingestionTime),
  level: e.level,
});

/** What one stream reads, checked before it starts (`LogStreamService.prepare`). */
export interface StreamPlan {
  query: StreamQuery;
  source: AnyStreamSource;
  startMs: number;
  endMs: number;
  tail: boolean;
  resume: ResumePoint | undefined;
  /** The id of a final event that no other came before: where this stream began. */
  startId: string;
}

export interface StreamRuntime {
  hub: TailHub;
  batchSize: number;
  keepAliveMs: number;
  maxDurationMs: number;
  log?: Logger;
  /** Reads history batches as heavy work, each batch in its turn (the process's fair budget). */
  gate?: <T>(steps: AsyncIterable<T>, signal: AbortSignal) => AsyncIterable<T>;
  /** Called once when the stream ends, however it ends. */
  onEnd(): void;
}

/**
 * One log stream: history, then optionally the live tail, as an object-mode Readable of `LogStreamEvent`s (so an
 * async iterable too). Its buffer holds one event: a consumer that stops reading (a client that stops taking
 * bytes) stops the history reads and makes the tail poller skip this stream, its cursor kept. Destroying the
 * stream (the client went away) stops all upstream work through its abort signal and sends nothing more.
 */
export class LogStream extends Readable {
  private readonly abort = new AbortController();
  private finished = false;
  private lastId: string | undefined;
  private unsubscribe: (() => void) | undefined;
  /** The history reader waiting for the consumer to take what it was given. */
  private wanted: (() => void) | undefined;
  private readonly keepAlive: NodeJS.Timeout;
  private readonly maxDuration: NodeJS.Timeout;

  constructor(
    private readonly plan: StreamPlan,
    private readonly runtime: StreamRuntime,
  ) {
    super({ objectMode: true, highWaterMark: 1 });
    this.keepAlive = setInterval(() => {
      // A stalled consumer already has something waiting: one keep-alive is as good as many.
      if (!this.finished && this.readableLength === 0) this.push({ kind: 'keep-alive' } satisfies LogStreamEvent);
    }, runtime.keepAliveMs);
    this.maxDuration = setTimeout(() => this.stop(), runtime.maxDurationMs);
  }

  override [Symbol.asyncIterator](): AsyncIterableIterator<LogStreamEvent> {
    return super[Symbol.asyncIterator]();
  }

  /** Starts reading. */
  start(): void {
    void this.run();
  }

  /** Ends the stream now with its final event (shutdown, the maximum duration). */
  stop(): void {
    this.finish(true);
  }

  override _read(): void {
    this.wake();
  }

  private wake(): void {
    const wanted = this.wanted;
    this.wanted = undefined;
    wanted?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.finish(false);
    callback(error);
  }

  private async run(): Promise<void> {
    const { query, source, startMs, endMs, tail, resume } = this.plan;
    const signal = this.abort.signal;
    try {
      const switchPoint =
        resume?.p === 'h' && resume.s !== undefined
          ? source.restore(resume.s)
          : tail && resume?.p !== 't'
            ? await source.tailStart(query, signal)
            : undefined;
      if (resume?.p !== 't') {
        const after: HistoryCursor | undefined = resume?.p === 'h' ? { ts: resume.ts, id: resume.e } : undefined;
        const compactSwitch = switchPoint === undefined ? undefined : source.compact(switchPoint);
        const window = { startMs, endMs };
        const batches = source.history(query, window, after, switchPoint, this.runtime.batchSize, signal);
        for await (const batch of this.runtime.gate?.(batches, signal) ?? batches) {
          if (this.finished) return;
          if (batch.length > 0) {
            const last = batch[batch.length - 1]!;
            this.send(batch, encodeEventId({ p: 'h', ts: last.timestamp, e: last.eventId, s: compactSwitch }));
            // Backpressure: read no further until the consumer has taken this batch.
            await this.room();
            if (this.finished) return;
          }
        }
      }
      if (this.finished) return;
      if (!tail) return this.finish(true);
      const cursor = resume?.p === 't' ? source.restore(resume.c) : switchPoint;
      if (cursor === undefined)
        throw appError('logs:stream:invalid-parameters', { description: 'Last-Event-ID does not resume this stream.' });
      this.lastId ??= encodeEventId({ p: 't', c: source.compact(cursor) });
      this.unsubscribe = this.runtime.hub.subscribe(source, query, {
        cursor,
        startMs,
        // While an event waits for the consumer, the poller skips this stream and its cursor stays put.
        ready: () => !this.finished && this.readableLength < this.readableHighWaterMark,
        deliver: (events, next) => this.send(events, encodeEventId({ p: 't', c: source.compact(next) })),
        fail: (error) => {
          // A gap is the stream's own answer (resume with Last-Event-ID); anything else is the upstream's failure.
          if (error instanceof AppError) return this.finish(true, error);
          this.runtime.log?.error({ err: error }, 'log stream upstream failed');
          this.finish(true, appError('logs:upstream:failed', { internal: false }));
        },
      });
    } catch (error) {
      if (this.finished) return;
      this.runtime.log?.error({ err: error }, 'log stream failed');
      this.finish(true, error instanceof AppError ? error : appError('logs:upstream:failed', { internal: false }));
    }
  }

  /**
   * One event per call, with the id of the position right after its own last log event. Callers hand over at
   * most `batchSize` log events (history batches are that size; the tail hub asks sources for at most that many
   * per delivery): cutting a larger delivery here would give every part the id after the last part.
   */
  private send(events: StreamEvent[], id: string): void {
    if (this.finished) return;
    this.lastId = id;
    this.push({ kind: 'events', id, events: events.map(wire) } satisfies LogStreamEvent);
  }

  /** Resolves once the consumer has taken what is buffered (at once while it keeps up), or the stream ended. */
  private room(): Promise<void> {
    if (this.finished || this.readableLength < this.readableHighWaterMark) return Promise.resolve();
    return new Promise((resolve) => {
      this.wanted = resolve;
    });
  }

  /** `final`: the stream ends with its final event (after `error`'s); otherwise it was destroyed and sends nothing. */
  private finish(final: boolean, error?: AppError): void {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.keepAlive);
    clearTimeout(this.maxDuration);
    this.unsubscribe?.();
    this.abort.abort();
    this.wake();
    this.runtime.onEnd();
    if (!final) return;
    if (error !== undefined) this.push({ kind: 'error', error } satisfies LogStreamEvent);
    this.push({ kind: 'final', id: this.lastId ?? this.plan.startId } satisfies LogStreamEvent);
    this.push(null);
  }
}
