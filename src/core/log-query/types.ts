import type { ProviderKind } from '../enums.js';
import type { Level } from '../log-level.js';
import type { LogQueryResponse, LogQueryRow } from '../schemas/log-query.js';

/** A cloud account as the log backends need it. */
export interface CloudAccount {
  id: string;
  organizationId: string;
  provider: ProviderKind;
  region: string;
  roleArn: string | null;
  externalId: string | null;
  endpoint: string | null;
}

/** Which streams of a log group a target reads. */
export type StreamSelector = { kind: 'all' } | { kind: 'prefix'; prefix: string } | { kind: 'names'; names: string[] };

/** One log group (and its streams) to query, and the source it answers for. */
export interface LogTarget {
  account: CloudAccount;
  region: string;
  logGroup: string;
  streams: StreamSelector;
  /** Module instance id; empty for rows matched through a deployment resource. */
  sourceId: string;
  /** Log source id; empty for rows matched through a deployment resource. */
  logSourceId: string;
}

/** A row as a backend returns it: newest first, ties by eventId descending. */
export interface BackendRow {
  timestamp: number;
  message: string;
  logGroup: string;
  logStream: string;
  eventId: string;
  level: Level;
  /** The message parsed as a JSON object, when it is one. */
  json?: unknown;
}

/** Inclusive window in epoch milliseconds. */
export interface TimeWindow {
  startMs: number;
  endMs: number;
}

/** A row of the log query's answer: the response schema's type (`LogRowSchema`). */
export type LogRow = LogQueryRow;

/** The log query's answer: the response schema's type (`LogQueryResponse`). */
export type LogQueryResult = LogQueryResponse;

/** Targets grouped by account and region, in first-seen order: what one upstream call can cover. */
export function byAccountAndRegion(targets: LogTarget[]): LogTarget[][] {
  const groups = new Map<string, LogTarget[]>();
  for (const t of targets) {
    const key = `${t.account.id}\u0000${t.region}`;
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [t]);
    else list.push(t);
  }
  return [...groups.values()];
}
