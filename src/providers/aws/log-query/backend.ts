import {
  type CloudWatchLogsClient,
  GetQueryResultsCommand,
  type GetQueryResultsCommandOutput,
  StartQueryCommand,
  StopQueryCommand,
  type ResultField,
} from '@aws-sdk/client-cloudwatch-logs';
import { setTimeout as sleep } from 'node:timers/promises';
import { linkSignals } from '../../../core/abort.js';
import { compileInsightsFilter, insightsCapabilities } from '../../../core/filter-tree/index.js';
import { deriveLevel, parseJsonMessage } from '../../../core/log-level.js';
import {
  byAccountAndRegion,
  type BackendRow,
  type CloudAccount,
  type LogTarget,
  type StreamSelector,
  type TimeWindow,
} from '../../../core/log-query/types.js';
import type { AwsClients } from '../clients.js';
import type { AwsQuotas } from '../quotas.js';
import { concurrencyLimit, runLimited, type ConcurrencyLimit } from '../../../core/concurrency.js';
import type { BucketCount, BucketLayout } from '../../../core/log-query/histogram.js';
import type { FetchRequest, FetchResult, HistogramRequest, HistogramResult, LogBackend } from '../../log-query/port.js';

export interface InsightsOptions {
  /** Log groups one StartQuery may name (AWS: 50). */
  maxGroupsPerQuery: number;
  /** Concurrent queries per cloud account and region in this process (AWS: 30 per AWS account and region). */
  maxConcurrentQueries: number;
  /**
   * The cluster-wide query slots of each AWS account and region (`AwsQuotas`). Unset: only the per-process limit
   * above applies.
   */
  quotas?: Pick<AwsQuotas, 'insightsSlot'>;
  pollIntervalMs: number;
  /** Rows one query may return (AWS: 10,000). */
  maxRowsPerQuery?: number;
  /** The process's client factory, and the time limit of one call. */
  aws: Pick<AwsClients, 'cloudWatchLogs' | 'callTimeoutMs'>;
}

export class InsightsQueryError extends Error {
  override name = 'InsightsQueryError';
}

const FINAL_FAILURES = new Set(['Failed', 'Cancelled', 'Timeout', 'Unknown']);

/** `YYYY-MM-DD HH:MM:SS.mmm` (UTC), as Insights returns `@timestamp`. */
export function parseInsightsTimestamp(value: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?/.exec(value);
  if (!m) return Number.NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, Number((m[7] ?? '0').padEnd(3, '0')));
}

const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const regexLiteral = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/]/g, (c) => `\\${c}`);

function streamClause(streams: StreamSelector): string | undefined {
  switch (streams.kind) {
    case 'all':
      return undefined;
    case 'prefix':
      return `@logStream like /^${regexLiteral(streams.prefix)}/`;
    case 'names':
      return `@logStream in [${streams.names.map(quote).join(', ')}]`;
  }
}

/**
 * The commands that scope a unit's query: the sources' stream restrictions, the exact millisecond window
 * (StartQuery itself takes whole seconds) and the pushed filter.
 */
function scopeCommands(
  targets: LogTarget[],
  window: { startMs: number; endMs: number },
  filterCommand: string,
): string[] {
  const parts: string[] = [];
  const byGroup = new Map<string, StreamSelector[]>();
  for (const t of targets) byGroup.set(t.logGroup, [...(byGroup.get(t.logGroup) ?? []), t.streams]);
  const restricted = [...byGroup.values()].some((sels) => sels.every((s) => s.kind !== 'all'));
  if (restricted) {
    const perGroup = [...byGroup].map(([group, sels]) => {
      const groupMatch = `@log like /(^|:)${regexLiteral(group)}$/`;
      const streamMatch = sels.some((s) => s.kind === 'all')
        ? undefined
        : sels.map((s) => streamClause(s)!).join(' or ');
      return streamMatch === undefined ? `(${groupMatch})` : `(${groupMatch} and (${streamMatch}))`;
    });
    parts.push(`filter ${perGroup.join(' or ')}`);
  }
  parts.push(`filter toMillis(@timestamp) >= ${window.startMs} and toMillis(@timestamp) <= ${window.endMs}`);
  if (filterCommand !== '') parts.push(filterCommand);
  return parts;
}

/**
 * The query text for one unit: the sources' stream restrictions, the exact
 * millisecond window (StartQuery itself takes whole seconds), the pushed
 * filter, newest first, at most `limit` rows.
 */
export function buildInsightsQuery(
  targets: LogTarget[],
  window: { startMs: number; endMs: number },
  filterCommand: string,
  limit: number,
): string {
  return [
    'fields @timestamp, @message, @logStream, @log, @ptr',
    ...scopeCommands(targets, window, filterCommand),
    'sort @timestamp desc',
    `limit ${limit}`,
  ].join('\n| ');
}

/**
 * The histogram's query for one unit: the same scope as `buildInsightsQuery`, then the bucket index of each row,
 * aligned to the window's start (`bin()` would align buckets to the epoch, not to the window), and one row per
 * bucket with its count: `toMillis`, `floor`, arithmetic and `stats count(*) as n by b` are all documented
 * (CWL_QuerySyntax). A bucket without rows has no row.
 */
export function buildInsightsHistogramQuery(targets: LogTarget[], layout: BucketLayout, filterCommand: string): string {
  return [
    ...scopeCommands(targets, layout, filterCommand),
    `fields floor((toMillis(@timestamp) - ${layout.startMs}) / ${layout.widthMs}) as b`,
    'stats count(*) as n by b',
  ].join('\n| ');
}

const field = (row: ResultField[], name: string) => row.find((f) => f.field === name)?.value ?? '';

/** CloudWatch Logs Insights: StartQuery over ≤ 50 groups, GetQueryResults polled until final, StopQuery on abort. */
export class InsightsLogBackend implements LogBackend {
  readonly capabilities = insightsCapabilities();
  private readonly limiters = new Map<string, ConcurrencyLimit>();

  constructor(private readonly options: InsightsOptions) {}

  units(targets: LogTarget[]): LogTarget[][] {
    const units: LogTarget[][] = [];
    for (const group of byAccountAndRegion(targets)) {
      let unit: LogTarget[] = [];
      let groups = new Set<string>();
      for (const t of group) {
        if (!groups.has(t.logGroup) && groups.size === this.options.maxGroupsPerQuery) {
          units.push(unit);
          unit = [];
          groups = new Set();
        }
        groups.add(t.logGroup);
        unit.push(t);
      }
      if (unit.length > 0) units.push(unit);
    }
    return units;
  }

  private limiter(account: CloudAccount, region: string): ConcurrencyLimit {
    const key = `${account.id}\u0000${region}`;
    let limiter = this.limiters.get(key);
    if (limiter === undefined) {
      limiter = concurrencyLimit(this.options.maxConcurrentQueries);
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  async fetch({ targets: requested, window, filter, limit, signal }: FetchRequest): Promise<FetchResult> {
    const targets = queryable(requested);
    const first = targets[0];
    if (first === undefined) return { rows: [], exhausted: true };
    const compiled = compileInsightsFilter(filter);
    if (compiled.matchesNothing) return { rows: [], exhausted: true };
    const rowsLimit = Math.min(limit, this.options.maxRowsPerQuery ?? 10_000);
    const queryString = buildInsightsQuery(targets, window, compiled.command, rowsLimit);
    const groups = [...new Set(targets.map((t) => t.logGroup))];
    return this.query(first, groups, window, queryString, rowsLimit, signal, (out) => {
      const all = (out.results ?? []).map(toRow);
      const rows = all.filter((r) => Number.isFinite(r.timestamp));
      rows.sort((a, b) => b.timestamp - a.timestamp || (a.eventId < b.eventId ? 1 : a.eventId > b.eventId ? -1 : 0));
      const matched = out.statistics?.recordsMatched ?? 0;
      // A row whose time cannot be read cannot be placed on a page: its group's answer is partial, never silently short.
      const unreadable = all
        .filter((r) => !Number.isFinite(r.timestamp))
        .map((r) => (groups.includes(r.logGroup) ? [r.logGroup] : groups));
      const missed = [...new Set(unreadable.flat())];
      return {
        rows,
        exhausted: all.length < rowsLimit && matched <= all.length,
        ...(missed.length > 0 ? { missed } : {}),
      };
    });
  }

  /**
   * One `stats` query for the unit, counted against the account's Insights quota like the query's. Insights cannot
   * derive Berth's levels from the message (JSON fields, pino numbers, a leading word: see `deriveLevel`), so every
   * row is counted under UNKNOWN, and said so in `inexact`.
   */
  async histogram({ targets: requested, layout, filter, signal }: HistogramRequest): Promise<HistogramResult> {
    const targets = queryable(requested);
    const first = targets[0];
    if (first === undefined) return { counts: [] };
    const compiled = compileInsightsFilter(filter);
    if (compiled.matchesNothing) return { counts: [] };
    const inexact = [
      `levels: ${this.capabilities.backend} cannot derive the levels Berth derives from the message: its rows are counted under UNKNOWN`,
    ];
    if (compiled.relaxed)
      inexact.push(
        `filter: longer than a ${this.capabilities.backend} query may be: it was left out of the histogram, whose counts include rows it would exclude`,
      );
    const queryString = buildInsightsHistogramQuery(targets, layout, compiled.command);
    const groups = [...new Set(targets.map((t) => t.logGroup))];
    // One result row per bucket at most.
    return this.query(first, groups, layout, queryString, layout.count, signal, (out) => {
      const counts: BucketCount[] = [];
      let unreadable = false;
      for (const row of out.results ?? []) {
        const bucket = Number(field(row, 'b'));
        const count = Number(field(row, 'n'));
        if (
          !Number.isInteger(bucket) ||
          bucket < 0 ||
          bucket >= layout.count ||
          !Number.isInteger(count) ||
          count < 0
        ) {
          unreadable = true;
          continue;
        }
        counts.push({ bucket, level: 'UNKNOWN', count });
      }
      // A count that cannot be placed in a bucket: the unit's answer is partial, never silently short.
      return { counts, inexact, ...(unreadable ? { missed: groups } : {}) };
    });
  }

  /**
   * StartQuery, GetQueryResults until final (`complete` reads it), StopQuery when abandoned; within this process's
   * limit for the account and one of the account's Insights slots.
   */
  private query<T>(
    first: LogTarget,
    groups: string[],
    window: TimeWindow,
    queryString: string,
    limit: number,
    signal: AbortSignal,
    complete: (out: GetQueryResultsCommandOutput) => T,
  ): Promise<T> {
    // Asked for at every call, not held: a query outlives one call, and the factory may retire a client unused that long.
    const client = () => this.options.aws.cloudWatchLogs(first.account, first.region);
    // The per-process limit stays in front of the cluster's: this process's queries of an account queue here, in
    // memory, and it still bounds them while the database cannot be asked (a lease lost or not released).
    return runLimited(this.limiter(first.account, first.region), signal, async () => {
      // Held until the unit is over, StopQuery included: the query counts against the account until it is stopped.
      const slot = await this.options.quotas?.insightsSlot(first.account, first.region, signal);
      try {
        return await this.poll(client, groups, window, queryString, limit, signal, complete);
      } finally {
        await slot?.release();
      }
    });
  }

  /** StartQuery, GetQueryResults until final, StopQuery when abandoned. */
  private async poll<T>(
    client: () => CloudWatchLogsClient,
    groups: string[],
    window: TimeWindow,
    queryString: string,
    limit: number,
    signal: AbortSignal,
    complete: (out: GetQueryResultsCommandOutput) => T,
  ): Promise<T> {
    const started = await client().send(
      new StartQueryCommand({
        logGroupNames: groups,
        startTime: Math.floor(window.startMs / 1000),
        endTime: Math.ceil(window.endMs / 1000),
        queryString,
        limit,
      }),
      { abortSignal: signal },
    );
    const queryId = started.queryId;
    if (!queryId) throw new InsightsQueryError('StartQuery returned no queryId');
    let finished = false;
    try {
      for (;;) {
        const out = await client().send(new GetQueryResultsCommand({ queryId }), { abortSignal: signal });
        const status = out.status ?? 'Unknown';
        if (status === 'Complete') {
          finished = true;
          return complete(out);
        }
        if (FINAL_FAILURES.has(status)) {
          finished = true;
          throw new InsightsQueryError(`Logs Insights query ${queryId} ended ${status}`);
        }
        await sleep(this.options.pollIntervalMs, undefined, { signal });
      }
    } finally {
      if (!finished) {
        // Abandoned (timeout or client gone): free the account's query slot upstream too. Bounded like any AWS
        // call: the slots of this unit are held until it returns, and an endpoint that never answers would keep them.
        const stop = linkSignals([], this.options.aws.callTimeoutMs, 'AWS StopQuery');
        await client()
          .send(new StopQueryCommand({ queryId }), { abortSignal: stop.signal })
          .catch(() => undefined)
          .finally(() => stop.dispose());
      }
    }
  }
}

/**
 * A target naming no stream (an EC2 instance without a release yet) matches nothing, and `@logStream in []` is no
 * valid query: it is left out, and the query skipped when nothing is left.
 */
function queryable(targets: LogTarget[]): LogTarget[] {
  return targets.filter((t) => t.streams.kind !== 'names' || t.streams.names.length > 0);
}

function toRow(fields: ResultField[]): BackendRow {
  const message = field(fields, '@message');
  const json = parseJsonMessage(message);
  const log = field(fields, '@log');
  return {
    timestamp: parseInsightsTimestamp(field(fields, '@timestamp')),
    message,
    logGroup: log.includes(':') ? log.slice(log.indexOf(':') + 1) : log,
    logStream: field(fields, '@logStream'),
    eventId: field(fields, '@ptr'),
    level: deriveLevel(message, json),
    json,
  };
}
