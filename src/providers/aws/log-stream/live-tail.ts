import {
  type CloudWatchLogsClient,
  type LiveTailSessionLogEvent,
  type LiveTailSessionUpdate,
  StartLiveTailCommand,
  type StartLiveTailResponseStream,
} from '@aws-sdk/client-cloudwatch-logs';
import { DeadlineError } from '../../../core/abort.js';

/** What a StartLiveTail session covers: 1 to 10 log group ARNs; stream names or prefixes only with one group. */
export interface LiveTailInput {
  logGroupIdentifiers: string[];
  logStreamNames?: string[];
  logStreamNamePrefixes?: string[];
  logEventFilterPattern?: string;
}

export interface LiveTailEvent {
  /** The log group's ARN as it was given in `logGroupIdentifiers`. */
  logGroupIdentifier: string;
  logStreamName: string;
  message: string;
  timestamp: number;
  ingestionTime: number;
}

/** `start` once the session is open; then an `update` about every second, empty ones too. */
export type LiveTailMessage = { kind: 'start' } | { kind: 'update'; events: LiveTailEvent[]; sampled: boolean };

export interface LiveTailOptions {
  /** Until the first frame: StartLiveTail answered and the session started. */
  openTimeoutMs: number;
  /** Longest gap between two frames of an open session (AWS sends one every second). */
  idleTimeoutMs: number;
}

export const LIVE_TAIL_DEFAULTS: LiveTailOptions = { openTimeoutMs: 15_000, idleTimeoutMs: 10_000 };

/**
 * StartLiveTail is not allowed or not available for this account, endpoint or request: the caller polls instead.
 * `reason` is AWS's error name (`AccessDeniedException`, `LimitExceededException`, …) or `HTTP <status>`.
 */
export class LiveTailRefusedError extends Error {
  override name = 'LiveTailRefusedError';
  constructor(
    readonly reason: string,
    cause: unknown,
  ) {
    super(`StartLiveTail refused: ${reason}`, { cause });
  }
}

/**
 * The session ended: `timeout` (AWS's session limit, renew it), `streaming` (SessionStreamingException, reconnect),
 * `dropped` (connection lost, stalled, throttled or a 5xx: reconnect after a backoff).
 */
export class LiveTailEndedError extends Error {
  override name = 'LiveTailEndedError';
  constructor(
    readonly reason: 'timeout' | 'streaming' | 'dropped',
    message: string,
    cause?: unknown,
  ) {
    super(`Live tail ended (${reason}): ${message}`, cause === undefined ? undefined : { cause });
  }
}

/** An update whose event cannot be read (a broken AWS-compatible endpoint): reported, never skipped in silence. */
export class UnreadableLiveTailEventError extends Error {
  override name = 'UnreadableEventError';
}

/** Refusals that no retry of the same request would change. */
const REFUSED = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'UnknownOperationException',
  'InvalidOperationException',
  'LimitExceededException',
]);
const THROTTLED = new Set(['ThrottlingException', 'Throttling', 'TooManyRequestsException', 'RequestLimitExceeded']);

interface SdkError {
  name?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

/**
 * What an error means. A status of 300 or more is AWS's answer to the request; an error while the stream was read
 * carries the 200 of the answer (the SDK adds it), or none.
 */
function classify(error: unknown, opened: boolean): Error {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkError;
  const name = typeof e.name === 'string' ? e.name : '';
  if (name === 'SessionTimeoutException') return new LiveTailEndedError('timeout', 'the session timed out', error);
  if (name === 'SessionStreamingException') return new LiveTailEndedError('streaming', String(e.message), error);
  const status = e.$metadata?.httpStatusCode;
  if (opened || typeof status !== 'number' || status < 300) {
    return new LiveTailEndedError('dropped', `the stream failed: ${String(error)}`, error);
  }
  const reason = name === '' || name === 'Error' ? `HTTP ${status}` : name;
  if (REFUSED.has(name) || status === 404 || status === 501) return new LiveTailRefusedError(reason, error);
  if (THROTTLED.has(name) || status === 429 || status === 408 || status >= 500) {
    return new LiveTailEndedError('dropped', `StartLiveTail answered ${reason}`, error);
  }
  // Any other refusal of the request (a group that does not exist, a pattern live tail does not take, …): the
  // same request would fail again; polling serves it, or reports the error itself.
  return new LiveTailRefusedError(reason, error);
}

const text = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/** The SDK hands the JSON fields over without checking their types. */
function toEvent(e: LiveTailSessionLogEvent): LiveTailEvent {
  const { logGroupIdentifier, logStreamName, message, timestamp, ingestionTime } = e as Record<
    keyof LiveTailSessionLogEvent,
    unknown
  >;
  if (
    typeof logGroupIdentifier !== 'string' ||
    logGroupIdentifier === '' ||
    !Number.isSafeInteger(timestamp) ||
    !text(message) ||
    !text(logStreamName)
  ) {
    throw new UnreadableLiveTailEventError(
      `StartLiveTail sent an event that cannot be read: ${JSON.stringify(e).slice(0, 200)}`,
    );
  }
  return {
    logGroupIdentifier,
    logStreamName: (logStreamName as string | null | undefined) ?? '',
    message: (message as string | null | undefined) ?? '',
    timestamp: timestamp as number,
    ingestionTime: Number.isSafeInteger(ingestionTime) ? (ingestionTime as number) : (timestamp as number),
  };
}

function toUpdate(u: LiveTailSessionUpdate): LiveTailMessage {
  const results: unknown = u.sessionResults ?? [];
  if (!Array.isArray(results)) {
    throw new UnreadableLiveTailEventError('StartLiveTail sent sessionResults that are not a list');
  }
  return { kind: 'update', events: results.map(toEvent), sampled: u.sessionMetadata?.sampled === true };
}

/**
 * One CloudWatch Logs Live Tail session as messages. It ends by throwing LiveTailRefusedError (poll instead),
 * LiveTailEndedError (reconnect or renew) or UnreadableLiveTailEventError; after `signal` aborts, or when the caller
 * returns from the iteration, it closes the connection and returns quietly. The client is shared: the session is
 * cancelled through its own abort signal, never by destroying the client.
 */
export async function* liveTail(
  client: CloudWatchLogsClient,
  input: LiveTailInput,
  signal: AbortSignal,
  options: Partial<LiveTailOptions> = {},
): AsyncGenerator<LiveTailMessage> {
  const { openTimeoutMs, idleTimeoutMs } = { ...LIVE_TAIL_DEFAULTS, ...options };
  if (signal.aborted) return;
  const session = new AbortController();
  const onAbort = () => session.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  let watchdog: NodeJS.Timeout | undefined;
  let stalled: string | undefined;
  const watch = (ms: number, what: string) => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => {
      stalled = `${what} within ${ms} ms`;
      session.abort(new DeadlineError(`StartLiveTail: ${stalled}`));
    }, ms);
  };
  let opened = false;
  try {
    watch(openTimeoutMs, 'no first frame');
    const out = await client.send(new StartLiveTailCommand(input), { abortSignal: session.signal });
    if (out.responseStream === undefined) throw new LiveTailEndedError('dropped', 'StartLiveTail answered no stream');
    for await (const frame of out.responseStream as AsyncIterable<StartLiveTailResponseStream>) {
      opened = true;
      clearTimeout(watchdog);
      let message: LiveTailMessage | undefined;
      if (frame.sessionStart !== undefined) message = { kind: 'start' };
      else if (frame.sessionUpdate !== undefined) message = toUpdate(frame.sessionUpdate);
      else if (frame.SessionTimeoutException !== undefined) {
        throw new LiveTailEndedError('timeout', 'the session timed out', frame.SessionTimeoutException);
      } else if (frame.SessionStreamingException !== undefined) {
        throw new LiveTailEndedError('streaming', 'SessionStreamingException', frame.SessionStreamingException);
      }
      // The gap is measured while waiting for AWS, not while the caller holds a message.
      if (message !== undefined) yield message;
      watch(idleTimeoutMs, 'no frame');
    }
    throw new LiveTailEndedError('dropped', 'the stream ended without an exception');
  } catch (error) {
    if (signal.aborted) return;
    if (
      error instanceof LiveTailEndedError ||
      error instanceof LiveTailRefusedError ||
      error instanceof UnreadableLiveTailEventError
    ) {
      throw error;
    }
    if (stalled !== undefined) throw new LiveTailEndedError('dropped', stalled, error);
    throw classify(error, opened);
  } finally {
    clearTimeout(watchdog);
    signal.removeEventListener('abort', onAbort);
    // Closes the connection if the session is still open (the caller returned, or an event was unreadable).
    session.abort();
  }
}

/** The AWS partition of a region (`aws-cn` for cn-*, `aws-us-gov` for us-gov-*, the ISO partitions, else `aws`). */
function partitionOf(region: string): string {
  if (region.startsWith('cn-')) return 'aws-cn';
  if (region.startsWith('us-gov-')) return 'aws-us-gov';
  if (region.startsWith('us-isob-')) return 'aws-iso-b';
  if (region.startsWith('us-isof-')) return 'aws-iso-f';
  if (region.startsWith('us-iso-')) return 'aws-iso';
  if (region.startsWith('eu-isoe-')) return 'aws-iso-e';
  if (region.startsWith('eusc-')) return 'aws-eusc';
  return 'aws';
}

/** A log group's ARN as StartLiveTail takes it (no trailing `:*`); a name that already is an ARN is kept. */
export function logGroupArn(name: string, region: string, awsAccountId: string): string {
  if (name.startsWith('arn:')) return name.endsWith(':*') ? name.slice(0, -2) : name;
  return `arn:${partitionOf(region)}:logs:${region}:${awsAccountId}:log-group:${name}`;
}
