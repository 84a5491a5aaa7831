import type { FastifyReply, FastifyRequest } from 'fastify';
import { canRead, type Caller } from '../../core/caller.js';
import { AppError, appError, listDetail, renderError } from '../../core/errors.js';
import type { Db } from '../../store/db.js';
import { compileFilterPattern } from '../../core/filter-pattern/index.js';
import { loadAccount } from '../log-query/resolve.js';
import { MAX_TIME_MS, parseTime } from '../../core/log-time.js';
import { SseWriter } from '../../http/sse.js';
import { TailHub } from './tail-hub.js';
import type { HistoryCursor, StreamEvent, StreamQuery, StreamSource } from '../../providers/log-stream-source.js';

export interface StreamParams {
  accountId: string;
  logGroups: string[];
  logStreamPrefix?: string;
  logStreamNames?: string[];
  region?: string;
  startTime?: string;
  endTime?: string;
  tail?: boolean;
  filterPattern?: string;
}

export interface StreamOptions {
  pollIntervalMs: number;
  keepAliveMs: number;
  maxPerPrincipal: number;
  maxDurationMs: number;
  batchSize: number;
}

/** What an SSE id holds: the history position and switch point, or the tail cursor. */
type ResumePoint = { p: 'h'; ts: number; e: string; s?: unknown } | { p: 't'; c: unknown };

export function encodeEventId(point: ResumePoint): string {
  return Buffer.from(JSON.stringify(point)).toString('base64url');
}

export function decodeEventId(id: string | undefined): ResumePoint | undefined {
  if (id === undefined || id === '' || id.length > 4096) return undefined;
  try {
    const v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8')) as ResumePoint;
    if (v?.p === 'h' && Number.isSafeInteger(v.ts) && typeof v.e === 'string') return v;
    if (v?.p === 't' && v.c !== undefined) return v;
  } catch {
    // fall through
  }
  return undefined;
}

/**
 * A stored time as ISO 8601 UTC with milliseconds. The API takes times up to MAX_TIME_MS only, but a row written
 * below it (an older version, a manual insert) may hold any bigint: `new Date(ms).toISOString()` throws past
 * ±8.64e15 and writes a six-digit year past 9999. Such a time is sent as the nearest one in range rather than
 * failing the stream or breaking the wire format.
 */
export function wireTime(ms: number): string {
  return new Date(Number.isNaN(ms) ? 0 : Math.min(Math.max(Math.trunc(ms), 0), MAX_TIME_MS)).toISOString();
}
const wire = (e: StreamEvent) => ({
  logStreamName: e.logStreamName,
  message: e.message,
  timestamp: wireTime(e.timestamp),
  ingestionTime: wireTime(e.ingestionTime),
  level: e.level,
});

/** Log groups per stream at most, counted after splitting (a group given twice counts once). */
export const MAX_LOG_GROUPS = 50;
/** Stream names per stream at most (FilterLogEvents' `logStreamNames` limit), counted after splitting. */
export const MAX_STREAM_NAMES = 100;

const invalid = (description: string, field: string) =>
  appError('logs:stream:invalid-parameters', { description, metadata: { parameter: field } });

/**
 * A time in the query string. `parseTime` words its error for a JSON body (`validation:request:invalid-body`,
 * `body.startTime`); these are query parameters, so the error names them as schema failures of the query do.
 */
function queryTime(value: string, field: 'startTime' | 'endTime'): number {
  try {
    return parseTime(value, field);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw appError('validation:request:invalid-query', {
      details: [listDetail('Invalid fields', [`query.${field}: must be an ISO 8601 date-time or epoch milliseconds`])],
    });
  }
}

/** Splits repeated and comma-separated values into one list. */
export function splitList(values: string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

/** The log stream (spec endpoint 4): history, then optionally the live tail, over server-sent events. */
export class LogStreamService {
  readonly hub: TailHub;
  private readonly perPrincipal = new Map<string, number>();
  private readonly active = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly db: Db,
    // biome-ignore lint/suspicious/noExplicitAny: each source has its own cursor type; the hub keeps them apart
    private readonly sources: { local: StreamSource<any>; aws?: StreamSource<any> },
    private readonly options: StreamOptions,
  ) {
    this.hub = new TailHub(options.pollIntervalMs, options.batchSize);
  }

  get activeStreams(): number {
    return this.active.size;
  }

  /** Checks everything that can fail before the stream starts, so those failures are ordinary error responses. */
  async prepare(caller: Caller, params: StreamParams) {
    const logGroups = [...new Set(splitList(params.logGroups) ?? [])];
    if (logGroups.length === 0) throw invalid('Give at least one log group in logGroups.', 'logGroups');
    if (logGroups.length > MAX_LOG_GROUPS)
      throw invalid(`At most ${MAX_LOG_GROUPS} log groups per stream.`, 'logGroups');
    const names = splitList(params.logStreamNames);
    // FilterLogEvents' own limit, counted after splitting (a name given twice counts once): on `aws` every
    // group is then one scan, on `local` one array parameter.
    if (names !== undefined && new Set(names).size > MAX_STREAM_NAMES) {
      throw invalid(`At most ${MAX_STREAM_NAMES} stream names per stream.`, 'logStreamNames');
    }
    const hasPrefix = params.logStreamPrefix !== undefined && params.logStreamPrefix !== '';
    const hasNames = names !== undefined && names.length > 0;
    if (hasPrefix === hasNames) {
      throw invalid(
        'Give exactly one of logStreamPrefix and logStreamNames.',
        hasPrefix ? 'logStreamNames' : 'logStreamPrefix',
      );
    }
    const account = await loadAccount(this.db, params.accountId);
    if (account === undefined || !canRead(caller, account.organizationId)) {
      throw appError('logs:account:not-found', { metadata: { accountId: params.accountId } });
    }
    const source = account.provider === 'local' ? this.sources.local : this.sources.aws;
    if (source === undefined)
      throw appError('logs:upstream:failed', { description: `No stream source for ${account.provider} accounts.` });
    const startMs = params.startTime === undefined ? 0 : queryTime(params.startTime, 'startTime');
    const tail = params.tail === true;
    const endMs = tail || params.endTime === undefined ? Number.MAX_SAFE_INTEGER : queryTime(params.endTime, 'endTime');
    if (startMs > endMs) throw invalid('startTime is after endTime.', 'startTime');
    const pattern = params.filterPattern ?? '';
    const query: StreamQuery = {
      account,
      region: params.region ?? account.region,
      logGroups,
      streams: hasPrefix
        ? { kind: 'prefix', prefix: params.logStreamPrefix! }
        : { kind: 'names', names: [...new Set(names!)] },
      pattern,
      matches: compileFilterPattern(pattern),
    };
    return { query, source, startMs, endMs: tail ? Number.MAX_SAFE_INTEGER : Math.min(endMs, Date.now()), tail };
  }

  async stream(caller: Caller, params: StreamParams, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { query, source, startMs, endMs, tail } = await this.prepare(caller, params);
    const count = this.perPrincipal.get(caller.principalId) ?? 0;
    if (count >= this.options.maxPerPrincipal) {
      throw appError('logs:stream:too-many-streams', {
        description: `At most ${this.options.maxPerPrincipal} concurrent streams per principal.`,
        headers: { 'retry-after': '5' },
      });
    }
    const lastEventIdHeader = request.headers['last-event-id'];
    const resume = decodeEventId(typeof lastEventIdHeader === 'string' ? lastEventIdHeader : undefined);
    // The id of a final message that nothing came before: where this request began (its own Last-Event-ID, else
    // the beginning), so every message carries an id that resumes.
    const startId = resume !== undefined ? (lastEventIdHeader as string) : encodeEventId({ p: 'h', ts: 0, e: '' });

    this.perPrincipal.set(caller.principalId, count + 1);
    reply.hijack();
    const sse = new SseWriter(reply.raw);
    sse.open({ 'x-request-id': request.id });
    const abort = new AbortController();
    let finished = false;
    let unsubscribe: (() => void) | undefined;
    const keepAlive = setInterval(() => sse.comment('keep-alive'), this.options.keepAliveMs);
    const finish = (final: boolean, error?: AppError) => {
      if (finished) return;
      finished = true;
      clearInterval(keepAlive);
      clearTimeout(maxDuration);
      unsubscribe?.();
      abort.abort();
      this.active.delete(stop);
      const n = (this.perPrincipal.get(caller.principalId) ?? 1) - 1;
      if (n <= 0) this.perPrincipal.delete(caller.principalId);
      else this.perPrincipal.set(caller.principalId, n);
      if (error !== undefined) sse.send({ event: 'error', data: renderError(error, request.id, caller.superadmin) });
      if (final) sse.send({ id: lastId ?? startId, data: { events: [], isFinal: true } });
      sse.end();
    };
    const stop = () => finish(true);
    this.active.add(stop);
    const maxDuration = setTimeout(stop, this.options.maxDurationMs);
    reply.raw.on('close', () => finish(false));

    let lastId: string | undefined;
    // The client may have hung up while prepare() ran: 'close' was then emitted before the listener above existed.
    if (reply.raw.destroyed) return finish(false);
    // Shutting down: a stream that arrives now ends at once rather than keep the server open.
    if (this.closed) return stop();
    // One message per call, with the id of the position right after its own last event. Callers hand over at
    // most `batchSize` events (history batches are that size; the tail hub asks sources for at most that
    // many per delivery): cutting a larger delivery here would give every part the id after the last part.
    const sendEvents = (events: StreamEvent[], id: string) => {
      lastId = id;
      sse.send({ id, data: { events: events.map(wire), isFinal: false } });
    };

    try {
      const switchPoint =
        resume?.p === 'h' && resume.s !== undefined
          ? source.restore(resume.s)
          : tail && resume?.p !== 't'
            ? await source.tailStart(query, abort.signal)
            : undefined;
      if (resume?.p !== 't') {
        const after: HistoryCursor | undefined = resume?.p === 'h' ? { ts: resume.ts, id: resume.e } : undefined;
        const compactSwitch = switchPoint === undefined ? undefined : source.compact(switchPoint);
        for await (const batch of source.history(
          query,
          { startMs, endMs },
          after,
          switchPoint,
          this.options.batchSize,
          abort.signal,
        )) {
          if (finished) return;
          if (batch.length > 0) {
            const last = batch[batch.length - 1]!;
            sendEvents(batch, encodeEventId({ p: 'h', ts: last.timestamp, e: last.eventId, s: compactSwitch }));
            // Backpressure: read no further until the client has taken this batch.
            await sse.drained();
          }
        }
      }
      if (finished) return;
      if (!tail) return finish(true);
      const cursor = resume?.p === 't' ? source.restore(resume.c) : switchPoint;
      if (cursor === undefined)
        throw appError('logs:stream:invalid-parameters', { description: 'Last-Event-ID does not resume this stream.' });
      lastId ??= encodeEventId({ p: 't', c: source.compact(cursor) });
      unsubscribe = this.hub.subscribe(source, query, {
        cursor,
        startMs,
        ready: () => !sse.congested,
        deliver: (events, next) => sendEvents(events, encodeEventId({ p: 't', c: source.compact(next) })),
        fail: (error) => {
          request.log.error({ err: error }, 'log stream upstream failed');
          finish(true, appError('logs:upstream:failed', { internal: false }));
        },
      });
    } catch (error) {
      if (finished) return;
      request.log.error({ err: error }, 'log stream failed');
      finish(true, error instanceof AppError ? error : appError('logs:upstream:failed', { internal: false }));
    }
  }

  /** Server shutdown: every stream ends with isFinal and closes. */
  close(): void {
    this.closed = true;
    for (const stop of [...this.active]) stop();
    this.hub.close();
  }
}
