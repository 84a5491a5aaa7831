// The live tail's public types (see live-tail.ts).
import type { Level } from '../../../src/core/log-level.js';

export type TailState = 'connecting' | 'live' | 'reconnecting' | 'paused' | 'ended' | 'error';

/** Berth's error object (docs/design.md#errors), or one this client makes with a `client:stream:*` code. */
export interface ApiError {
  code: string;
  message: string;
  description?: string;
  action?: unknown;
  details?: unknown[];
  metadata?: unknown;
  requestId?: string;
}

/** What one stream tails: one (account, region) and the selectors GET /cloud/logs/stream takes. */
export interface TailGroup {
  accountId: string;
  region: string;
  logGroups: string[];
  /** Exactly one of logStreamPrefix and logStreamNames; an empty prefix: every stream of the log groups. */
  logStreamPrefix?: string;
  logStreamNames?: string[];
  /** CloudWatch Logs filter pattern; empty or absent: every event. */
  filterPattern?: string;
}

/** A log event as the stream sends it (times as ISO 8601 UTC strings), with a key unique in the page. */
export interface TailEvent {
  /** The event's log group, when the server names it (a stream may read several). */
  logGroupName?: string;
  logStreamName: string;
  message: string;
  timestamp: string;
  ingestionTime: string;
  level: Level;
  key: string;
}

export interface TailStreamStatus {
  state: TailState;
  /** In 'error': why it stopped. In 'reconnecting': the failure being retried (absent after a clean drop). */
  error?: ApiError;
  /** The HTTP status of a refused connection (4xx, 5xx), when that is what happened. */
  httpStatus?: number;
  /** In 'reconnecting': the wait before the next attempt (ms). */
  retryInMs?: number;
  /** Failed attempts in a row (0 once the stream sends anything). */
  attempt: number;
  /** The id a new connection resumes from, as of this status (absent until the stream sent one). */
  lastEventId?: string;
}

export interface TailStatus {
  /** 'error' if any stream is in error, else reconnecting > connecting > paused > live; 'ended' when all ended. */
  state: TailState;
  /** The first stream error, in state 'error'. */
  error?: ApiError;
  /** One per group, in the order given. */
  streams: TailStreamStatus[];
}

export interface TailTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
