// Shared pieces of the fake AWS endpoint: errors, recorded calls, faults, ids, times.
import { createHash, randomBytes, randomUUID } from 'node:crypto';

export type FakeService = 'logs' | 'acm' | 'route53' | 'sts';

/** An error the fake answers in the protocol's wire format. */
export class AwsError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status?: number) {
    super(message);
    this.name = code;
    this.code = code;
    this.status = status ?? defaultStatusFor(code);
  }
}

const SERVER_ERROR_STATUS: Record<string, number> = {
  ServiceUnavailableException: 503,
  ServiceUnavailable: 503,
  InternalFailure: 500,
  InternalServerException: 500,
  InternalServerError: 500,
  InternalError: 500,
  InternalStreamingException: 500,
};

const NOT_FOUND_STATUS: Record<string, number> = {
  // Route 53 models these with @httpError(404).
  NoSuchHostedZone: 404,
  NoSuchChange: 404,
  NoSuchHealthCheck: 404,
};

export function defaultStatusFor(code: string): number {
  return SERVER_ERROR_STATUS[code] ?? NOT_FOUND_STATUS[code] ?? 400;
}

/** One request the fake received (recorded before any fault is applied). */
export interface RecordedCall {
  service: FakeService;
  /** Operation name, e.g. `FilterLogEvents`, `ChangeResourceRecordSets`, `AssumeRole`. */
  op: string;
  /** The decoded request (JSON body, form fields, or the SDK-shaped object parsed from XML + path). */
  input: Record<string, unknown>;
  /** Region and access key id from the SigV4 `Authorization` header, when signed. */
  region: string | undefined;
  accessKeyId: string | undefined;
  /** Epoch ms when the request arrived. */
  at: number;
  /** Filled once answered. `errorCode` is set for error answers (injected or not). */
  status?: number;
  errorCode?: string;
}

/** What `failNext` injects. */
export interface FaultSpec {
  /** AWS error code (`__type` / `<Code>`). Default `ThrottlingException`. */
  code?: string;
  /** HTTP status. Default: 5xx for known server codes, 404 for Route 53 NoSuch*, else 400. */
  status?: number;
  message?: string;
  /** How many consecutive calls fail. Default 1. */
  times?: number;
  /** Wait this long before answering the error. */
  delayMs?: number;
  /** Sets a `Retry-After` header (seconds). Note: the SDK honours it as a retry delay hint. */
  retryAfterSeconds?: number;
  /** Destroy the socket instead of answering (a network error on the client side). */
  reset?: boolean;
  /** Never answer: the request stays open until the client gives up or the fake closes. */
  hang?: boolean;
  /**
   * Answer this text instead of an AWS error, with `status` (default 200) and the protocol's content
   * type: garbage, truncated JSON, a body of the wrong shape.
   */
  rawBody?: string;
  /**
   * Announce the whole answer's length, send its first half, then destroy the socket (a connection
   * reset mid-response). The answer is `rawBody` when given, else the operation's built-in one.
   */
  cutMidBody?: boolean;
}

export interface DelaySpec {
  /** How many consecutive calls are delayed. Default: every call until `clearFaults()`. */
  times?: number;
}

interface QueuedFault {
  spec: FaultSpec;
  remaining: number;
}

interface QueuedDelay {
  ms: number;
  remaining: number; // Infinity = forever
}

/** Per-operation fault and delay queues. `op` may be `*` for any operation. */
export class FaultBook {
  private readonly faults = new Map<string, QueuedFault[]>();
  private readonly delays = new Map<string, QueuedDelay[]>();

  failNext(op: string, spec: FaultSpec = {}): void {
    const times = spec.times ?? 1;
    if (!(times >= 1)) throw new Error(`failNext: times must be >= 1, got ${times}`);
    const list = this.faults.get(op) ?? [];
    list.push({ spec, remaining: times });
    this.faults.set(op, list);
  }

  delay(op: string, ms: number, opts: DelaySpec = {}): void {
    const list = this.delays.get(op) ?? [];
    list.push({ ms, remaining: opts.times ?? Number.POSITIVE_INFINITY });
    this.delays.set(op, list);
  }

  clear(): void {
    this.faults.clear();
    this.delays.clear();
  }

  takeFault(op: string): FaultSpec | undefined {
    return takeHead(this.faults, op)?.spec ?? takeHead(this.faults, '*')?.spec;
  }

  /** Milliseconds to wait before handling a call of `op` (0 when none). */
  takeDelay(op: string): number {
    return takeHead(this.delays, op)?.ms ?? takeHead(this.delays, '*')?.ms ?? 0;
  }
}

function takeHead<T extends { remaining: number }>(map: Map<string, T[]>, key: string): T | undefined {
  const list = map.get(key);
  const head = list?.[0];
  if (!list || !head) return undefined;
  head.remaining -= 1;
  if (head.remaining <= 0) list.shift();
  if (list.length === 0) map.delete(key);
  return head;
}

// ---------------------------------------------------------------- ids and times

export const FAKE_ACCOUNT_ID = '123456789012';

export function requestId(): string {
  return randomUUID();
}

const ALNUM_UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function randomId(length: number, alphabet = ALNUM_UPPER): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[(bytes[i] ?? 0) % alphabet.length];
  return out;
}

export function shortHash(text: string, length = 32): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** A time given to a state accessor: epoch ms, a Date, or an ISO 8601 string. */
export type TimeInput = number | Date | string;

export function toMs(t: TimeInput): number {
  if (typeof t === 'number') return t;
  if (t instanceof Date) return t.getTime();
  const ms = Date.parse(t);
  if (Number.isNaN(ms)) throw new Error(`fake-aws: invalid time ${JSON.stringify(t)}`);
  return ms;
}

/** Epoch seconds as AWS JSON protocols send timestamps (fractional seconds allowed). */
export function toEpochSeconds(ms: number): number {
  return ms / 1000;
}

export function encodeToken(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeToken<T>(token: string, isValid: (v: unknown) => v is T): T | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    return isValid(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function optString(input: Record<string, unknown>, key: string): string | undefined {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new AwsError('InvalidParameterException', `${key} must be a string`);
  return v;
}

export function optNumber(input: Record<string, unknown>, key: string): number | undefined {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new AwsError('InvalidParameterException', `${key} must be a number`);
  }
  return v;
}

export function optStringList(input: Record<string, unknown>, key: string): string[] | undefined {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new AwsError('InvalidParameterException', `${key} must be a list of strings`);
  }
  return v as string[];
}
