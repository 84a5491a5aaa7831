// CloudWatch Logs StartLiveTail: a 200 answer whose body is an AWS event stream
// (`application/vnd.amazon.eventstream`) over HTTP/1.1, as the SDK reads it. Frames: `sessionStart` at once,
// `sessionUpdate` every `updateIntervalMs` (empty ones too), `SessionTimeoutException` after `sessionTimeoutMs`.
//
//   aws.liveTail.options.updateIntervalMs = 100;
//   aws.liveTail.sendStreamingException();   // SessionStreamingException to every open session, then ends them
//   aws.liveTail.dropAll();                  // destroys every open session's socket mid-stream
//   aws.liveTail.sessions[0].input           // what StartLiveTail received
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { EventStreamCodec, type MessageHeaders } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import { AwsError, type RecordedCall, optString, optStringList, requestId } from './core.js';
import type { FakeLogs, StoredLogEvent } from './logs.js';

export interface FakeLiveTailOptions {
  /** Time between `sessionUpdate` frames (AWS: about 1 s). */
  updateIntervalMs: number;
  /** A session ends with SessionTimeoutException after this long (AWS: 3 hours). */
  sessionTimeoutMs: number;
  /** Events sent per wall-clock second and session at most; past it the update says `sampled` (AWS: 500). */
  maxEventsPerSecond: number;
  /** Sessions open at once; one more is refused with LimitExceededException (AWS: 15 per account). */
  maxConcurrentSessions: number;
}

export function defaultLiveTailOptions(): FakeLiveTailOptions {
  return { updateIntervalMs: 1000, sessionTimeoutMs: 3 * 3600_000, maxEventsPerSecond: 500, maxConcurrentSessions: 15 };
}

/** How a session ended: its timeout, an injected exception, `dropAll`, the client closing it, or `close()`. */
export type LiveTailEnd = 'timeout' | 'streaming-exception' | 'dropped' | 'client-closed' | 'fake-closed';

/** One StartLiveTail session, kept after it ends. */
export interface LiveTailSessionRecord {
  sessionId: string;
  requestId: string;
  /** The request as received. */
  input: Record<string, unknown>;
  call: RecordedCall;
  startedAt: number;
  open: boolean;
  endedBy?: LiveTailEnd;
  endedAt?: number;
  /** `sessionUpdate` frames sent, and the events they carried. */
  updates: number;
  eventsSent: number;
  /** Updates that said `sampled: true`. */
  sampledUpdates: number;
}

const LOG_GROUP_ARN = /^arn:aws[a-z-]*:logs:[a-z0-9-]+:\d{12}:log-group:([.\-_/#A-Za-z0-9]{1,512}?)(?::\*)?$/;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function frame(headers: Record<string, string>, body: unknown): Uint8Array {
  const h: MessageHeaders = {};
  for (const [k, v] of Object.entries(headers)) h[k] = { type: 'string', value: v };
  return codec.encode({ headers: h, body: fromUtf8(JSON.stringify(body)) });
}

const eventFrame = (type: string, body: unknown) =>
  frame({ ':message-type': 'event', ':event-type': type, ':content-type': 'application/json' }, body);

const exceptionFrame = (type: string, message: string) =>
  frame({ ':message-type': 'exception', ':exception-type': type, ':content-type': 'application/json' }, { message });

interface Live {
  record: LiveTailSessionRecord;
  res: ServerResponse;
  socket: Socket;
  /** Group name → the identifier as the client gave it. */
  groups: Map<string, string>;
  streamNames?: string[];
  streamPrefixes?: string[];
  pattern: string;
  pending: StoredLogEvent[];
  second: number;
  sentThisSecond: number;
  timers: NodeJS.Timeout[];
  unsubscribe: () => void;
}

export class FakeLiveTail {
  readonly options: FakeLiveTailOptions;
  readonly sessions: LiveTailSessionRecord[] = [];
  private readonly live = new Set<Live>();

  constructor(
    private readonly logs: FakeLogs,
    options: Partial<FakeLiveTailOptions> = {},
  ) {
    this.options = { ...defaultLiveTailOptions(), ...options };
  }

  /** Sessions started (answered 200). */
  get started(): number {
    return this.sessions.length;
  }

  /** Sessions whose connection is open now. */
  get openSessions(): number {
    return this.live.size;
  }

  /** Sends SessionStreamingException to every open session and ends it. Returns how many. */
  sendStreamingException(message = 'Live Tail session has encountered an error, please try again.'): number {
    const all = [...this.live];
    for (const s of all) this.finish(s, 'streaming-exception', exceptionFrame('SessionStreamingException', message));
    return all.length;
  }

  /** Destroys every open session's socket without a last frame (a dropped connection). Returns how many. */
  dropAll(): number {
    const all = [...this.live];
    for (const s of all) {
      this.end(s, 'dropped');
      s.socket.destroy();
    }
    return all.length;
  }

  close(): void {
    for (const s of [...this.live]) this.end(s, 'fake-closed');
  }

  /** Validates a StartLiveTail request (throws AwsError before anything is sent), then streams the session. */
  open(input: Record<string, unknown>, call: RecordedCall, req: IncomingMessage, res: ServerResponse): void {
    const ids = optStringList(input, 'logGroupIdentifiers');
    const streamNames = optStringList(input, 'logStreamNames');
    const streamPrefixes = optStringList(input, 'logStreamNamePrefixes');
    const pattern = optString(input, 'logEventFilterPattern') ?? '';
    if (ids === undefined || ids.length < 1 || ids.length > 10) {
      throw new AwsError(
        'InvalidParameterException',
        "1 validation error detected: Value at 'logGroupIdentifiers' failed to satisfy constraint: Member must have length between 1 and 10",
      );
    }
    const groups = new Map<string, string>();
    for (const id of ids) {
      const name = LOG_GROUP_ARN.exec(id)?.[1];
      if (name === undefined) throw new AwsError('InvalidParameterException', `Invalid log group ARN: ${id}`);
      if (!this.logs.groupNames().includes(name)) {
        throw new AwsError('ResourceNotFoundException', `The specified log group does not exist: ${id}`);
      }
      groups.set(name, id);
    }
    if (streamNames !== undefined && streamPrefixes !== undefined) {
      throw new AwsError(
        'InvalidParameterException',
        'logStreamNames and logStreamNamePrefixes cannot both be specified.',
      );
    }
    for (const [key, list] of [
      ['logStreamNames', streamNames],
      ['logStreamNamePrefixes', streamPrefixes],
    ] as const) {
      if (list === undefined) continue;
      if (ids.length !== 1) {
        throw new AwsError('InvalidParameterException', `${key} can only be specified with exactly one log group.`);
      }
      if (list.length < 1 || list.length > 100) {
        throw new AwsError('InvalidParameterException', `${key} must have between 1 and 100 members.`);
      }
    }
    if (pattern.length > 1024) {
      throw new AwsError('InvalidParameterException', 'logEventFilterPattern must be at most 1024 characters.');
    }
    if (this.live.size >= this.options.maxConcurrentSessions) {
      throw new AwsError(
        'LimitExceededException',
        `You have reached the maximum number of concurrent Live Tail sessions (${this.options.maxConcurrentSessions}).`,
      );
    }

    const record: LiveTailSessionRecord = {
      sessionId: randomUUID(),
      requestId: requestId(),
      input,
      call,
      startedAt: Date.now(),
      open: true,
      updates: 0,
      eventsSent: 0,
      sampledUpdates: 0,
    };
    this.sessions.push(record);
    const s: Live = {
      record,
      res,
      socket: req.socket,
      groups,
      ...(streamNames === undefined ? {} : { streamNames }),
      ...(streamPrefixes === undefined ? {} : { streamPrefixes }),
      pattern,
      pending: [],
      second: 0,
      sentThisSecond: 0,
      timers: [],
      unsubscribe: () => undefined,
    };
    this.live.add(s);
    s.unsubscribe = this.logs.onPut((events) => {
      for (const e of events) if (this.matches(s, e)) s.pending.push(e);
    });
    res.on('close', () => this.end(s, 'client-closed'));

    call.status = 200;
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': record.requestId });
    res.write(
      eventFrame('sessionStart', {
        requestId: record.requestId,
        sessionId: record.sessionId,
        logGroupIdentifiers: ids,
        ...(streamNames === undefined ? {} : { logStreamNames: streamNames }),
        ...(streamPrefixes === undefined ? {} : { logStreamNamePrefixes: streamPrefixes }),
        ...(pattern === '' ? {} : { logEventFilterPattern: pattern }),
      }),
    );
    s.timers.push(
      setInterval(() => this.update(s), this.options.updateIntervalMs),
      setTimeout(
        () =>
          this.finish(
            s,
            'timeout',
            exceptionFrame('SessionTimeoutException', 'Session timed out after the maximum duration.'),
          ),
        this.options.sessionTimeoutMs,
      ),
    );
  }

  private matches(s: Live, e: StoredLogEvent): boolean {
    if (!s.groups.has(e.logGroupName)) return false;
    if (s.streamNames !== undefined && !s.streamNames.includes(e.logStreamName)) return false;
    if (s.streamPrefixes !== undefined && !s.streamPrefixes.some((p) => e.logStreamName.startsWith(p))) return false;
    return s.pattern.trim() === '' || this.logs.options.filterPatternMatcher(s.pattern, e.message, e);
  }

  /** One `sessionUpdate`: what was stored since the last one, cut to the per-second budget. */
  private update(s: Live): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== s.second) {
      s.second = second;
      s.sentThisSecond = 0;
    }
    const budget = Math.max(0, this.options.maxEventsPerSecond - s.sentThisSecond);
    const sent = s.pending.slice(0, budget);
    const sampled = s.pending.length > sent.length;
    s.pending = [];
    s.sentThisSecond += sent.length;
    s.record.updates += 1;
    s.record.eventsSent += sent.length;
    if (sampled) s.record.sampledUpdates += 1;
    s.res.write(
      eventFrame('sessionUpdate', {
        sessionMetadata: { sampled },
        sessionResults: sent.map((e) => ({
          logStreamName: e.logStreamName,
          logGroupIdentifier: s.groups.get(e.logGroupName),
          message: e.message,
          timestamp: e.timestamp,
          ingestionTime: e.ingestionTime,
        })),
      }),
    );
  }

  /** Sends a last frame and ends the response. */
  private finish(s: Live, how: LiveTailEnd, last: Uint8Array): void {
    if (!this.live.has(s)) return;
    this.end(s, how);
    s.res.end(last);
  }

  private end(s: Live, how: LiveTailEnd): void {
    if (!this.live.delete(s)) return;
    for (const t of s.timers) clearTimeout(t);
    s.unsubscribe();
    s.record.open = false;
    s.record.endedBy = how;
    s.record.endedAt = Date.now();
  }
}
