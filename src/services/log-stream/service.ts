import { canRead, type Caller } from '../../core/caller.js';
import { AppError, appError, listDetail } from '../../core/errors.js';
import { checkRegexCost, filterPatternRegexCosts } from '../../core/filter-cost.js';
import { parseFilterPattern } from '../../core/filter-pattern/index.js';
import type { Logger } from '../../core/logger.js';
import { parseTime } from '../../core/log-time.js';
import type { AnyStreamSource, MessageFilter, StreamQuery } from '../../providers/log-stream/port.js';
import { FilterBudgetError, type FilterPool } from '../filter-pool/pool.js';
import type { Db } from '../../store/db.js';
import { findCloudAccount } from '../../store/repositories/cloud-accounts.js';
import { checkResumable, decodeEventId, encodeEventId } from './resume-id.js';
import { LogStream } from './stream.js';
import type { ChangeEvent } from '../../store/change-feed.js';
import type { SharedTails } from './shared-tail.js';
import { TailHub } from './tail-hub.js';
import type { HeavyWork } from '../heavy-work.js';
import { MAX_LOG_GROUPS, MAX_STREAM_NAMES, type LogStreamQuery } from '../../core/schemas/log-stream.js';
import { requestFlow } from '../../core/request-flow.js';

/** A stream's parameters: the query string as the route validated it (`LogStreamQuery`). */
export type StreamParams = LogStreamQuery;

export interface StreamOptions {
  pollIntervalMs: number;
  keepAliveMs: number;
  /** Concurrent streams of one principal on one organization's accounts. */
  maxPerPrincipal: number;
  /** Concurrent streams of one organization's accounts, and of the whole process. */
  maxPerOrganization?: number;
  maxTotal?: number;
  maxDurationMs: number;
  batchSize: number;
  /** The process's budget of heavy work: each history batch is read as a piece of it. */
  heavy?: HeavyWork;
  /** The keys this replica follows cluster-wide (the aws live tail: one upstream per key in the cluster). */
  shared?: SharedTails;
  /** How long a new key's cursors wait for its window before reading upstream on their own. */
  warmupWaitMs?: number;
  /** Where filter patterns are applied to local rows: off the event loop, on a CPU budget per read. */
  filters: FilterPool;
  /** The database's change feed: an ingest into a local account wakes its tails (`log_events:<account id>`). */
  changes?: { subscribe(listener: (event: ChangeEvent) => void): () => void };
}

/** The change feed's payload for events written to a local account (migration 009). */
const INGEST_PREFIX = 'log_events:';

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

export interface OpenOptions {
  /** The Last-Event-ID the client sent, if any. */
  lastEventId?: string;
  /** Where failures after the start are logged (the request's logger). */
  log?: Logger;
}

/**
 * The log stream (operation 4, docs/design.md#4-log-stream): history, then optionally the live tail, as a stream of
 * events; `http/` sends them as server-sent events.
 */
export class LogStreamService {
  readonly hub: TailHub;
  /** Open streams by principal within the organization of the stream's account (`memberKey`). */
  private readonly perPrincipal = new Map<string, number>();
  private readonly perOrganization = new Map<string, number>();
  /** Streams refused before they started because a share was full, by organization (for /metrics). */
  readonly refused = new Map<string, number>();
  private readonly active = new Set<LogStream>();
  private closed = false;
  private readonly unwatch: (() => void) | undefined;

  constructor(
    private readonly db: Db,
    // Each source's cursors and batches stay its own: the hub keeps them apart (`AnyStreamSource`).
    private readonly sources: { local: AnyStreamSource; aws?: AnyStreamSource },
    private readonly options: StreamOptions,
  ) {
    this.hub = new TailHub(options.pollIntervalMs, {
      maxPerDelivery: options.batchSize,
      shared: options.shared,
      warmupWaitMs: options.warmupWaitMs,
    });
    this.unwatch = options.changes?.subscribe((event) => {
      if (event.kind === 'changed' && event.table.startsWith(INGEST_PREFIX))
        this.hub.wakeAccount(event.table.slice(INGEST_PREFIX.length));
    });
  }

  /** Upstreams of aws live tails this replica holds, by mode. */
  upstreams(): { live: number; poll: number } {
    return this.options.shared?.upstreams() ?? { live: 0, poll: 0 };
  }

  /** Falls back from Live Tail to polling, since start. */
  fallbacks(): number {
    return this.options.shared?.fallbacks ?? 0;
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
    // An empty prefix is a prefix every name has: the whole of the named groups, streams created later included.
    const hasPrefix = params.logStreamPrefix !== undefined;
    const hasNames = names !== undefined && names.length > 0;
    if (hasPrefix === hasNames) {
      throw invalid(
        'Give exactly one of logStreamPrefix and logStreamNames.',
        hasPrefix ? 'logStreamNames' : 'logStreamPrefix',
      );
    }
    const account = await findCloudAccount(this.db, params.accountId);
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
        ? params.logStreamPrefix === ''
          ? { kind: 'all' }
          : { kind: 'prefix', prefix: params.logStreamPrefix! }
        : { kind: 'names', names: [...new Set(names!)] },
      pattern,
      filter: patternFilter(this.options.filters, pattern),
    };
    return { query, source, startMs, endMs: tail ? Number.MAX_SAFE_INTEGER : Math.min(endMs, Date.now()), tail };
  }

  /**
   * Opens a stream. Everything that can fail before it starts fails here, as an ordinary error; after that,
   * failures are events of the stream. `lastEventId` resumes a stream where an earlier one left off.
   */
  async open(caller: Caller, params: StreamParams, options: OpenOptions = {}): Promise<LogStream> {
    // A forged or corrupted Last-Event-ID answers 400 before any statement runs; one whose cursor the account's
    // source cannot restore, before the stream starts (never an upstream failure inside it).
    const resume = decodeEventId(options.lastEventId);
    const { query, source, startMs, endMs, tail } = await this.prepare(caller, params);
    checkResumable(resume, source);
    const organizationId = query.account.organizationId;
    // A principal's streams count per organization: a key one organization minted for it cannot use up its
    // streams in another.
    const principalKey = memberKey(organizationId, caller.principalId);
    this.admit(principalKey, organizationId);
    // The id of a final event that nothing came before: where this request began (its own Last-Event-ID, else
    // the beginning), so every message carries an id that resumes.
    const startId =
      resume !== undefined && options.lastEventId !== undefined
        ? options.lastEventId
        : encodeEventId({ p: 'h', ts: 0, e: '' });

    increment(this.perPrincipal, principalKey, 1);
    increment(this.perOrganization, organizationId, 1);
    const heavy = this.options.heavy;
    const claim = { organizationId, principalId: caller.principalId, flow: requestFlow('log-stream', params) };
    const stream: LogStream = new LogStream(
      { query, source, startMs, endMs, tail, resume, startId },
      {
        hub: this.hub,
        batchSize: this.options.batchSize,
        keepAliveMs: this.options.keepAliveMs,
        maxDurationMs: this.options.maxDurationMs,
        log: options.log,
        gate: heavy === undefined ? undefined : (steps, signal) => heavy.eachStep(claim, signal, steps),
        onEnd: () => {
          this.active.delete(stream);
          increment(this.perPrincipal, principalKey, -1);
          increment(this.perOrganization, organizationId, -1);
        },
      },
    );
    this.active.add(stream);
    // Shutting down: a stream that arrives now ends at once rather than keep the server open.
    if (this.closed) stream.stop();
    else stream.start();
    return stream;
  }

  /**
   * Refuses a stream over its principal's share in the organization, the organization's or the process's share:
   * 429 before it starts.
   */
  private admit(principalKey: string, organizationId: string): void {
    const caps: [number | undefined, number, string][] = [
      [this.options.maxPerPrincipal, this.perPrincipal.get(principalKey) ?? 0, 'principal in an organization'],
      [this.options.maxPerOrganization, this.perOrganization.get(organizationId) ?? 0, 'organization'],
      [this.options.maxTotal, this.active.size, 'process'],
    ];
    for (const [cap, count, share] of caps) {
      if (cap === undefined || count < cap) continue;
      increment(this.refused, organizationId, 1);
      throw appError('logs:stream:too-many-streams', {
        description:
          share === 'process'
            ? `This server has its maximum of ${cap} concurrent streams open.`
            : `At most ${cap} concurrent streams per ${share}.`,
        headers: { 'retry-after': '5' },
      });
    }
  }

  /** Server shutdown: every stream ends with isFinal and closes. */
  close(): void {
    this.closed = true;
    this.unwatch?.();
    for (const stream of [...this.active]) stream.stop();
    this.hub.close();
  }
}

/** A principal within an organization (ids are printable: U+0000 separates them unambiguously). */
function memberKey(organizationId: string, principalId: string): string {
  return `${organizationId}\u0000${principalId}`;
}

/** Keeps every message: nothing to evaluate. */
const EVERYTHING: MessageFilter = { select: async (items) => [...items] };

/**
 * A stream's filter pattern, applied in the filter pool with a fresh CPU budget for each read (a history batch, a
 * tail read): a stream lasts hours, a read does not. Checked first, so a pattern that cannot parse or whose regexes
 * could exceed the budget on one message answers 400 before the stream starts.
 */
function patternFilter(filters: FilterPool, pattern: string): MessageFilter {
  if (parseFilterPattern(pattern).kind === 'all') return EVERYTHING;
  checkRegexCost(filterPatternRegexCosts(pattern), filters.options.cpuBudgetMs, 'filterPattern');
  return {
    async select(items, message, signal) {
      if (items.length === 0) return [];
      try {
        const keep = await filters.start({ kind: 'pattern', pattern }).keep(
          items.map((item) => ({ message: message(item) })),
          signal,
        );
        return items.filter((_, i) => keep[i] === 1);
      } catch (error) {
        if (!(error instanceof FilterBudgetError)) throw error;
        throw appError('logs:filter:too-costly', {
          description: `The filter pattern took longer than the ${error.budgetMs} ms of CPU one read of a stream may spend on it; the stream stopped here.`,
          metadata: { parameter: 'filterPattern', budgetMs: error.budgetMs },
        });
      }
    },
  };
}

function increment(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
