// CloudWatch Logs (awsJson1_1, X-Amz-Target: Logs_20140328.<Op>).
import { randomUUID } from 'node:crypto';
import {
  AwsError,
  FAKE_ACCOUNT_ID,
  decodeToken,
  encodeToken,
  isRecord,
  optNumber,
  optString,
  optStringList,
  toMs,
  type TimeInput,
} from './core.js';
import { isStatsQuery, runInsightsQuery } from './insights-query.js';

export interface StoredLogEvent {
  logGroupName: string;
  logStreamName: string;
  /** Epoch ms. */
  timestamp: number;
  /** Epoch ms. */
  ingestionTime: number;
  message: string;
  eventId: string;
  /** Insertion order, the last sort key (AWS: "the ID of the PutLogEvents request"). */
  seq: number;
}

export interface LogEventInput {
  timestamp: TimeInput;
  message: string;
  /** Default: `timestamp`. */
  ingestionTime?: TimeInput;
  /** Default: a 56-digit decimal id like AWS's, unique per event. */
  eventId?: string;
}

export interface ResultField {
  field: string;
  value: string;
}
export type ResultRow = ResultField[];

export type QueryStatus = 'Scheduled' | 'Running' | 'Complete' | 'Failed' | 'Cancelled' | 'Timeout' | 'Unknown';
export type FinalQueryStatus = 'Complete' | 'Failed' | 'Cancelled' | 'Timeout';

/** What StartQuery received. */
export interface QueryRequest {
  queryId: string;
  queryString: string;
  logGroupNames: string[];
  /** Epoch seconds, inclusive. */
  startTime: number;
  /** Epoch seconds, inclusive. */
  endTime: number;
  limit: number | undefined;
  queryLanguage: string | undefined;
}

export interface QueryHandlerContext {
  /** Events of the query's groups whose timestamp falls in [startTime s, endTime s + 999 ms], newest first. */
  eventsInWindow(): StoredLogEvent[];
  /** The default row for an event: @timestamp, @message, @logStream, @log, @ptr. */
  toRow(event: StoredLogEvent): ResultRow;
  accountId: string;
}

/** A query handler may return just rows, or rows plus how the query ends. */
export type QueryOutcome =
  | ResultRow[]
  | {
      rows?: ResultRow[];
      /** Default: rows.length. Above rows.length means the result was cut. */
      recordsMatched?: number;
      recordsScanned?: number;
      /** Final status for this query. Default: `options.queryFinalStatus`. */
      status?: FinalQueryStatus;
      /** GetQueryResults polls answered Scheduled/Running first. Default: `options.queryPollsBeforeFinal`. */
      pollsBeforeFinal?: number;
    };

/** Throw an `AwsError` (e.g. MalformedQueryException) to fail StartQuery. */
export type QueryHandler = (query: QueryRequest, ctx: QueryHandlerContext) => QueryOutcome;

/** Decides whether a message matches a CloudWatch Logs filter pattern. */
export type FilterPatternMatcher = (pattern: string, message: string, event: StoredLogEvent) => boolean;

export interface FakeLogsOptions {
  /** Max events per FilterLogEvents page (AWS: 10,000). The request's `limit` can lower it. */
  filterPageSize: number;
  /** Max bytes of messages per FilterLogEvents page (AWS: 1 MB). A page holds at least one event. */
  filterPageBytes: number;
  /** Empty pages (with a nextToken) answered at the start of every FilterLogEvents scan. */
  filterEmptyPages: number;
  /** When the last data page is reached, still return a nextToken; the next call answers an empty page without one. */
  filterTrailingEmptyPage: boolean;
  /** If set, FilterLogEvents calls beyond this many per rolling second fail with ThrottlingException (AWS: 5). */
  filterLogEventsTps: number | undefined;
  /**
   * Honour FilterLogEvents' deprecated `interleaved` flag as some AWS-compatible endpoints do: a call without
   * `interleaved: true` gets its events stream by stream (streams by name, each oldest first), not merged by
   * time. AWS itself ignores the flag and always interleaves (the default, false).
   */
  filterHonoursInterleaved: boolean;
  filterPatternMatcher: FilterPatternMatcher;
  queryHandler: QueryHandler;
  /** GetQueryResults polls answered `Scheduled` (first) / `Running` before the final status. */
  queryPollsBeforeFinal: number;
  queryFinalStatus: FinalQueryStatus;
  /** StartQuery log groups (AWS: 50). */
  maxLogGroupsPerQuery: number;
  /** Queries not yet final at once (AWS: 30 per account and region) → LimitExceededException. */
  maxConcurrentQueries: number;
  /** Max StartQuery `limit` (AWS: 10,000). Also the default limit. */
  maxQueryLimit: number;
}

export interface FakeQuery extends QueryRequest {
  status: QueryStatus;
  /** GetQueryResults calls so far. */
  polls: number;
  pollsBeforeFinal: number;
  finalStatus: FinalQueryStatus;
  rows: ResultRow[];
  recordsMatched: number;
  recordsScanned: number;
  createdAt: number;
}

interface LogStream {
  name: string;
  creationTime: number;
  events: StoredLogEvent[];
}
interface LogGroup {
  name: string;
  creationTime: number;
  streams: Map<string, LogStream>;
}

const FINAL: ReadonlySet<QueryStatus> = new Set(['Complete', 'Failed', 'Cancelled', 'Timeout']);

/** Default matcher: empty/absent pattern matches all, otherwise a case-sensitive substring. */
export const substringMatcher: FilterPatternMatcher = (pattern, message) =>
  pattern.trim() === '' || message.includes(pattern);

/** `YYYY-MM-DD HH:MM:SS.mmm` in UTC, as Logs Insights returns @timestamp. */
export function formatInsightsTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

export function insightsPtr(event: StoredLogEvent): string {
  return Buffer.from(`${event.logGroupName}\u0000${event.logStreamName}\u0000${event.eventId}`, 'utf8').toString(
    'base64',
  );
}

export function defaultRow(event: StoredLogEvent, accountId: string = FAKE_ACCOUNT_ID): ResultRow {
  return [
    { field: '@timestamp', value: formatInsightsTimestamp(event.timestamp) },
    { field: '@message', value: event.message },
    { field: '@logStream', value: event.logStreamName },
    { field: '@log', value: `${accountId}:${event.logGroupName}` },
    { field: '@ptr', value: insightsPtr(event) },
  ];
}

/**
 * Default handler: a `stats` query (what Berth's histogram sends) is run exactly (insights-query.ts); any other
 * query answers every event of the groups in the window, newest first, cut at `limit` (its filters not applied).
 */
export const defaultQueryHandler: QueryHandler = (query, ctx) => {
  if (isStatsQuery(query.queryString)) {
    const answer = runInsightsQuery(query.queryString, ctx.eventsInWindow(), ctx.accountId);
    if (answer.kind === 'stats')
      return { rows: answer.rows.slice(0, query.limit ?? 10_000), recordsMatched: answer.recordsMatched };
  }
  const events = ctx.eventsInWindow();
  const limit = query.limit ?? 10_000;
  return {
    rows: events.slice(0, limit).map((e) => ctx.toRow(e)),
    recordsMatched: events.length,
    recordsScanned: events.length,
  };
};

export function defaultLogsOptions(): FakeLogsOptions {
  return {
    filterPageSize: 10_000,
    filterPageBytes: 1_048_576,
    filterEmptyPages: 0,
    filterTrailingEmptyPage: false,
    filterLogEventsTps: undefined,
    filterHonoursInterleaved: false,
    filterPatternMatcher: substringMatcher,
    queryHandler: defaultQueryHandler,
    queryPollsBeforeFinal: 1,
    queryFinalStatus: 'Complete',
    maxLogGroupsPerQuery: 50,
    maxConcurrentQueries: 30,
    maxQueryLimit: 10_000,
  };
}

interface FilterToken {
  /** Sort key of the last event returned: [timestamp, ingestionTime, seq]. */
  k: [number, number, number] | null;
  /** Empty pages still to serve. */
  e: number;
  /** Not interleaved: the stream of the last event returned (streams are read one after another). */
  s?: string;
}
function isFilterToken(v: unknown): v is FilterToken {
  if (!isRecord(v) || typeof v.e !== 'number') return false;
  if (v.s !== undefined && typeof v.s !== 'string') return false;
  return v.k === null || (Array.isArray(v.k) && v.k.length === 3 && v.k.every((x) => typeof x === 'number'));
}

function compareEvents(a: StoredLogEvent, b: StoredLogEvent): number {
  return a.timestamp - b.timestamp || a.ingestionTime - b.ingestionTime || a.seq - b.seq;
}

function isAfterKey(e: StoredLogEvent, k: [number, number, number]): boolean {
  return (e.timestamp - k[0] || e.ingestionTime - k[1] || e.seq - k[2]) > 0;
}

/** Strips an ARN (`arn:aws:logs:r:acct:log-group:NAME[:*]`) down to the group name. */
function groupNameFromIdentifier(id: string): string {
  const m = /^arn:[^:]+:logs:[^:]*:[^:]*:log-group:(.+?)(?::\*)?$/.exec(id);
  return m?.[1] ?? id;
}

export class FakeLogs {
  readonly options: FakeLogsOptions;
  private readonly groupsByName = new Map<string, LogGroup>();
  private readonly queriesById = new Map<string, FakeQuery>();
  private seq = 0;
  private filterCallTimes: number[] = [];
  private readonly putListeners = new Set<(events: readonly StoredLogEvent[]) => void>();

  constructor(options: Partial<FakeLogsOptions> = {}) {
    this.options = { ...defaultLogsOptions(), ...options };
  }

  // -------------------------------------------------------------- state accessors

  createLogGroup(name: string, creationTime: TimeInput = Date.now()): void {
    if (!this.groupsByName.has(name)) {
      this.groupsByName.set(name, { name, creationTime: toMs(creationTime), streams: new Map() });
    }
  }

  createLogStream(group: string, stream: string, creationTime: TimeInput = Date.now()): void {
    this.createLogGroup(group, creationTime);
    const g = this.groupsByName.get(group);
    if (g && !g.streams.has(stream))
      g.streams.set(stream, { name: stream, creationTime: toMs(creationTime), events: [] });
  }

  deleteLogGroup(name: string): void {
    this.groupsByName.delete(name);
  }

  /** Adds events (creating the group and stream). Returns the stored events. */
  putLogEvents(group: string, stream: string, events: LogEventInput[]): StoredLogEvent[] {
    this.createLogStream(group, stream);
    const s = this.groupsByName.get(group)?.streams.get(stream);
    if (!s) throw new Error('unreachable');
    const stored = events.map((e): StoredLogEvent => {
      const seq = ++this.seq;
      const timestamp = toMs(e.timestamp);
      return {
        logGroupName: group,
        logStreamName: stream,
        timestamp,
        ingestionTime: e.ingestionTime === undefined ? timestamp : toMs(e.ingestionTime),
        message: e.message,
        eventId: e.eventId ?? `${String(Math.max(0, timestamp)).padStart(20, '0')}${String(seq).padStart(36, '0')}`,
        seq,
      };
    });
    s.events.push(...stored);
    for (const listener of this.putListeners) listener(stored);
    return stored;
  }

  /** Calls `listener` with the events each putLogEvents stores (StartLiveTail's feed). Returns the unsubscribe. */
  onPut(listener: (events: readonly StoredLogEvent[]) => void): () => void {
    this.putListeners.add(listener);
    return () => this.putListeners.delete(listener);
  }

  groupNames(): string[] {
    return [...this.groupsByName.keys()].sort();
  }

  streamNames(group: string): string[] {
    return [...(this.groupsByName.get(group)?.streams.keys() ?? [])].sort();
  }

  /** All stored events (of one group, if given), oldest first. */
  events(group?: string): StoredLogEvent[] {
    const groups =
      group === undefined
        ? [...this.groupsByName.values()]
        : [this.groupsByName.get(group)].filter((g) => g !== undefined);
    return groups.flatMap((g) => [...g.streams.values()].flatMap((s) => s.events)).sort(compareEvents);
  }

  queries(): FakeQuery[] {
    return [...this.queriesById.values()];
  }

  query(queryId: string): FakeQuery | undefined {
    return this.queriesById.get(queryId);
  }

  /** Queries not yet in a final status (they count against `maxConcurrentQueries`). */
  runningQueries(): FakeQuery[] {
    return this.queries().filter((q) => !FINAL.has(q.status));
  }

  // -------------------------------------------------------------- operations

  handle(op: string, input: Record<string, unknown>, region: string): unknown {
    switch (op) {
      case 'FilterLogEvents':
        return this.filterLogEvents(input);
      case 'StartQuery':
        return this.startQuery(input);
      case 'GetQueryResults':
        return this.getQueryResults(input);
      case 'StopQuery':
        return this.stopQuery(input);
      case 'DescribeLogGroups':
        return this.describeLogGroups(input, region);
      default:
        throw new AwsError('UnknownOperationException', `The fake does not implement Logs_20140328.${op}`);
    }
  }

  private requireGroup(name: string): LogGroup {
    const g = this.groupsByName.get(name);
    if (!g) throw new AwsError('ResourceNotFoundException', 'The specified log group does not exist.');
    return g;
  }

  private filterLogEvents(input: Record<string, unknown>): unknown {
    const logGroupName = optString(input, 'logGroupName');
    const logGroupIdentifier = optString(input, 'logGroupIdentifier');
    const logStreamNames = optStringList(input, 'logStreamNames');
    const logStreamNamePrefix = optString(input, 'logStreamNamePrefix');
    const startTime = optNumber(input, 'startTime');
    const endTime = optNumber(input, 'endTime');
    const filterPattern = optString(input, 'filterPattern');
    const nextToken = optString(input, 'nextToken');
    const limit = optNumber(input, 'limit');
    const interleaved = !this.options.filterHonoursInterleaved || input.interleaved === true;

    if ((logGroupName === undefined) === (logGroupIdentifier === undefined)) {
      throw new AwsError(
        'InvalidParameterException',
        'Exactly one of logGroupName or logGroupIdentifier must be specified.',
      );
    }
    if (logStreamNames !== undefined && logStreamNamePrefix !== undefined) {
      throw new AwsError(
        'InvalidParameterException',
        'Cannot specify both logStreamNames and logStreamNamePrefix in the same request.',
      );
    }
    if (logStreamNames !== undefined && (logStreamNames.length < 1 || logStreamNames.length > 100)) {
      throw new AwsError(
        'InvalidParameterException',
        `1 validation error detected: Value '[${logStreamNames.join(', ')}]' at 'logStreamNames' failed to satisfy constraint: Member must have length between 1 and 100`,
      );
    }
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 10_000)) {
      throw new AwsError(
        'InvalidParameterException',
        `1 validation error detected: Value '${limit}' at 'limit' failed to satisfy constraint: Member must have value between 1 and 10000`,
      );
    }
    if (startTime !== undefined && startTime < 0) {
      throw new AwsError('InvalidParameterException', `Value '${startTime}' at 'startTime' must be >= 0`);
    }
    if (startTime !== undefined && endTime !== undefined && endTime < startTime) {
      throw new AwsError('InvalidParameterException', 'endTime cannot be earlier than startTime.');
    }

    const now = Date.now();
    const tps = this.options.filterLogEventsTps;
    if (tps !== undefined) {
      this.filterCallTimes = this.filterCallTimes.filter((t) => now - t < 1000);
      if (this.filterCallTimes.length >= tps) throw new AwsError('ThrottlingException', 'Rate exceeded');
      this.filterCallTimes.push(now);
    }

    const group = this.requireGroup(groupNameFromIdentifier(logGroupName ?? logGroupIdentifier ?? ''));

    let token: FilterToken = { k: null, e: this.options.filterEmptyPages };
    if (nextToken !== undefined) {
      const decoded = decodeToken(nextToken, isFilterToken);
      if (!decoded) throw new AwsError('InvalidParameterException', 'The specified nextToken is invalid.');
      token = decoded;
    }

    const streams = [...group.streams.values()]
      .filter((s) =>
        logStreamNames !== undefined
          ? logStreamNames.includes(s.name)
          : logStreamNamePrefix !== undefined
            ? s.name.startsWith(logStreamNamePrefix)
            : true,
      )
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

    const pattern = filterPattern ?? '';
    const matcher = this.options.filterPatternMatcher;
    const after = token.k;
    const inWindow = (e: StoredLogEvent) =>
      (startTime === undefined || e.timestamp >= startTime) && (endTime === undefined || e.timestamp <= endTime);
    const matches = (e: StoredLogEvent) => pattern === '' || matcher(pattern, e.message, e);
    const candidates = interleaved
      ? streams
          .flatMap((s) => s.events)
          .filter((e) => inWindow(e) && (after === null || isAfterKey(e, after)))
          .sort(compareEvents)
          .filter(matches)
      : // Stream by stream (by name), each oldest first, resuming inside the stream of the last event returned.
        streams
          .filter((s) => token.s === undefined || s.name >= token.s)
          .flatMap((s) =>
            [...s.events]
              .sort(compareEvents)
              .filter((e) => inWindow(e) && (after === null || s.name !== token.s || isAfterKey(e, after))),
          )
          .filter(matches);

    const searched = (complete: boolean): unknown[] =>
      streams.map((s) => ({ logStreamName: s.name, searchedCompletely: complete }));

    if (token.e > 0) {
      return { events: [], searchedLogStreams: searched(false), nextToken: encodeToken({ ...token, e: token.e - 1 }) };
    }

    const pageSize = Math.min(this.options.filterPageSize, limit ?? Number.POSITIVE_INFINITY);
    const page: StoredLogEvent[] = [];
    let bytes = 0;
    for (const e of candidates) {
      if (page.length >= pageSize) break;
      const size = Buffer.byteLength(e.message, 'utf8');
      if (page.length > 0 && bytes + size > this.options.filterPageBytes) break;
      page.push(e);
      bytes += size;
    }
    const more = page.length < candidates.length;
    const last = page[page.length - 1];
    const giveToken = page.length > 0 && (more || this.options.filterTrailingEmptyPage);
    const out: Record<string, unknown> = {
      events: page.map((e) => ({
        logStreamName: e.logStreamName,
        timestamp: e.timestamp,
        message: e.message,
        ingestionTime: e.ingestionTime,
        eventId: e.eventId,
      })),
      searchedLogStreams: searched(!giveToken),
    };
    if (giveToken && last) {
      const k: [number, number, number] = [last.timestamp, last.ingestionTime, last.seq];
      out.nextToken = encodeToken(interleaved ? { k, e: 0 } : { k, e: 0, s: last.logStreamName });
    }
    return out;
  }

  private startQuery(input: Record<string, unknown>): unknown {
    const queryString = optString(input, 'queryString');
    const logGroupName = optString(input, 'logGroupName');
    const logGroupNames = optStringList(input, 'logGroupNames');
    const logGroupIdentifiers = optStringList(input, 'logGroupIdentifiers');
    const startTime = optNumber(input, 'startTime');
    const endTime = optNumber(input, 'endTime');
    const limit = optNumber(input, 'limit');
    const queryLanguage = optString(input, 'queryLanguage');

    if (queryString === undefined || queryString.trim() === '') {
      throw new AwsError('InvalidParameterException', 'queryString must be specified.');
    }
    if (startTime === undefined || endTime === undefined) {
      throw new AwsError('InvalidParameterException', 'startTime and endTime must be specified.');
    }
    if (!Number.isInteger(startTime) || !Number.isInteger(endTime) || startTime < 0 || endTime < 0) {
      throw new AwsError('InvalidParameterException', 'startTime and endTime must be epoch seconds.');
    }
    if (endTime < startTime) {
      throw new AwsError('InvalidParameterException', 'endTime cannot be less than startTime.');
    }
    const given = [logGroupName, logGroupNames, logGroupIdentifiers].filter((x) => x !== undefined).length;
    if (given > 1) {
      throw new AwsError(
        'InvalidParameterException',
        'Only one of logGroupName, logGroupNames or logGroupIdentifiers may be specified.',
      );
    }
    const groups = (logGroupIdentifiers ?? logGroupNames ?? (logGroupName === undefined ? [] : [logGroupName])).map(
      groupNameFromIdentifier,
    );
    if (groups.length === 0 && !/^\s*SOURCE\b/i.test(queryString)) {
      throw new AwsError('InvalidParameterException', 'At least one log group must be specified.');
    }
    const max = this.options.maxLogGroupsPerQuery;
    if (groups.length > max) {
      throw new AwsError(
        'InvalidParameterException',
        `1 validation error detected: Value at 'logGroupNames' failed to satisfy constraint: Member must have length less than or equal to ${max}`,
      );
    }
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > this.options.maxQueryLimit)) {
      throw new AwsError(
        'InvalidParameterException',
        `1 validation error detected: Value '${limit}' at 'limit' failed to satisfy constraint: Member must have value between 1 and ${this.options.maxQueryLimit}`,
      );
    }
    for (const g of groups) {
      if (!this.groupsByName.has(g)) {
        throw new AwsError(
          'ResourceNotFoundException',
          `Log group '${g}' does not exist for account ID '${FAKE_ACCOUNT_ID}'`,
        );
      }
    }
    if (this.runningQueries().length >= this.options.maxConcurrentQueries) {
      throw new AwsError(
        'LimitExceededException',
        `Account maximum query concurrency limit of [${this.options.maxConcurrentQueries}] reached.`,
      );
    }

    const request: QueryRequest = {
      queryId: randomUUID(),
      queryString,
      logGroupNames: groups,
      startTime,
      endTime,
      limit,
      queryLanguage,
    };
    const ctx: QueryHandlerContext = {
      accountId: FAKE_ACCOUNT_ID,
      toRow: (e) => defaultRow(e, FAKE_ACCOUNT_ID),
      eventsInWindow: () => {
        const lo = startTime * 1000;
        const hi = endTime * 1000 + 999;
        return groups
          .flatMap((g) => this.events(g))
          .filter((e) => e.timestamp >= lo && e.timestamp <= hi)
          .sort((a, b) => compareEvents(b, a));
      },
    };
    const outcome = this.options.queryHandler(request, ctx);
    const o = Array.isArray(outcome) ? { rows: outcome } : outcome;
    const rows = o.rows ?? [];
    const query: FakeQuery = {
      ...request,
      status: 'Scheduled',
      polls: 0,
      pollsBeforeFinal: o.pollsBeforeFinal ?? this.options.queryPollsBeforeFinal,
      finalStatus: o.status ?? this.options.queryFinalStatus,
      rows,
      recordsMatched: o.recordsMatched ?? rows.length,
      recordsScanned: o.recordsScanned ?? o.recordsMatched ?? rows.length,
      createdAt: Date.now(),
    };
    this.queriesById.set(query.queryId, query);
    return { queryId: query.queryId };
  }

  private getQueryResults(input: Record<string, unknown>): unknown {
    const queryId = optString(input, 'queryId');
    const q = queryId === undefined ? undefined : this.queriesById.get(queryId);
    if (!q) throw new AwsError('ResourceNotFoundException', 'Query does not exist.');
    if (!FINAL.has(q.status)) {
      q.polls += 1;
      q.status = q.polls <= q.pollsBeforeFinal ? (q.polls === 1 ? 'Scheduled' : 'Running') : q.finalStatus;
    }
    const done = q.status === 'Complete' || q.status === 'Timeout';
    const statistics = done
      ? {
          recordsMatched: q.recordsMatched,
          recordsScanned: q.recordsScanned,
          bytesScanned: q.rows.reduce((n, r) => n + r.reduce((m, f) => m + f.value.length, 0), 0),
        }
      : { recordsMatched: 0, recordsScanned: 0, bytesScanned: 0 };
    return {
      queryLanguage: q.queryLanguage ?? 'CWLI',
      results: done ? q.rows : [],
      statistics,
      status: q.status,
    };
  }

  private stopQuery(input: Record<string, unknown>): unknown {
    const queryId = optString(input, 'queryId');
    const q = queryId === undefined ? undefined : this.queriesById.get(queryId);
    if (!q) throw new AwsError('ResourceNotFoundException', 'Query does not exist.');
    if (FINAL.has(q.status)) throw new AwsError('InvalidParameterException', 'Query is already ended.');
    q.status = 'Cancelled';
    return { success: true };
  }

  private describeLogGroups(input: Record<string, unknown>, region: string): unknown {
    const prefix = optString(input, 'logGroupNamePrefix');
    const pattern = optString(input, 'logGroupNamePattern');
    const limit = optNumber(input, 'limit') ?? 50;
    const nextToken = optString(input, 'nextToken');
    if (prefix !== undefined && pattern !== undefined) {
      throw new AwsError(
        'InvalidParameterException',
        'LogGroup name prefix and LogGroup name pattern are mutually exclusive parameters.',
      );
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > 50) {
      throw new AwsError('InvalidParameterException', `Value '${limit}' at 'limit' must be between 1 and 50`);
    }
    const isOffset = (v: unknown): v is { o: number } => isRecord(v) && typeof v.o === 'number';
    const offset = nextToken === undefined ? 0 : decodeToken(nextToken, isOffset)?.o;
    if (offset === undefined) throw new AwsError('InvalidParameterException', 'The specified nextToken is invalid.');
    const all = this.groupNames().filter(
      (n) =>
        (prefix === undefined || n.startsWith(prefix)) &&
        (pattern === undefined || n.toLowerCase().includes(pattern.toLowerCase())),
    );
    const page = all.slice(offset, offset + limit);
    const out: Record<string, unknown> = {
      logGroups: page.map((name) => {
        const g = this.groupsByName.get(name);
        const storedBytes = [...(g?.streams.values() ?? [])]
          .flatMap((s) => s.events)
          .reduce((n, e) => n + Buffer.byteLength(e.message, 'utf8'), 0);
        return {
          logGroupName: name,
          creationTime: g?.creationTime ?? 0,
          metricFilterCount: 0,
          arn: `arn:aws:logs:${region}:${FAKE_ACCOUNT_ID}:log-group:${name}:*`,
          logGroupArn: `arn:aws:logs:${region}:${FAKE_ACCOUNT_ID}:log-group:${name}`,
          storedBytes,
          logGroupClass: 'STANDARD',
        };
      }),
    };
    if (offset + limit < all.length) out.nextToken = encodeToken({ o: offset + limit });
    return out;
  }
}
