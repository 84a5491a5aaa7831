import type { LogSourceCatalog } from '../caches/cached-log-sources.js';
import type { Caller } from '../../core/caller.js';
import type { ProviderKind } from '../../core/enums.js';
import { DeadlineError, linkSignals } from '../../core/abort.js';
import { concurrencyLimit, runLimited } from '../../core/concurrency.js';
import { FairQueue } from '../../core/fair-queue.js';
import { requestFlow } from '../../core/request-flow.js';
import { appError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { LogBackend } from '../../providers/log-query/port.js';
import type { Db } from '../../store/db.js';
import type { HeavyWork } from '../heavy-work.js';
import { FilterBudgetError, type FilterPool } from '../filter-pool/pool.js';
import { isDatabaseUnavailable } from '../../core/database-unavailable.js';
import { parseFilter, planFilter, TRUE, type FilterNode } from '../../core/filter-tree/index.js';
import type { Tenancy } from '../../store/tenancy.js';
import { resolveDeploymentResourceTargets } from './deployment-resource.js';
import { cutPage, type UnitResult } from '../../core/log-query/page.js';
import { countHistogram, type LogHistogramRequest, type LogHistogramResult } from './histogram.js';
import { checkSelectorRules, resolveInstanceTargets } from './resolve.js';
import { parseTime } from '../../core/log-time.js';
import type { BackendRow, LogQueryResult, LogRow, LogTarget, TimeWindow } from '../../core/log-query/types.js';
import { DEFAULT_LIMIT, MAX_LIMIT, type LogQueryBody } from '../../core/schemas/log-query.js';

export { DEFAULT_LIMIT, MAX_LIMIT };

/** The log query's body as the route validated it (`LogQueryBody`); `filter` is parsed here (`parseFilter`). */
export type LogQueryRequest = LogQueryBody;

export interface LogQueryOptions {
  sourceTimeoutMs: number;
  /** The whole query's time limit: sources still running then are stopped and reported missed. */
  deadlineMs: number;
  concurrency: number;
  /**
   * Where a filter's predicates that the backend could not apply run (off the event loop, on a CPU budget per
   * source); its budget also bounds the regexes a request may bring.
   */
  filters: FilterPool;
  /** The process's budget of heavy work; a query is one piece of it. Omitted: no budget (tests of the pure parts). */
  heavy?: HeavyWork;
  /** Where the instances' log sources are read (the in-process cache); omitted: the database each time. */
  logSources?: LogSourceCatalog;
}

export interface LogQueryContext {
  /** Aborts when the client has gone: every statement and upstream query of the request stops. */
  signal?: AbortSignal;
  log?: Logger;
}

export type BackendFor = (provider: ProviderKind) => LogBackend;

/** A request's window, parsed filter and sources (`LogQueryService.resolve`). */
export interface ResolvedRequest {
  window: TimeWindow;
  filter: FilterNode;
  targets: LogTarget[];
}

interface Unit {
  backend: LogBackend;
  targets: LogTarget[];
  effective: FilterNode;
  pushed: FilterNode;
  /** The backend's query is the effective filter itself (`FilterPlan.exact`). */
  exact: boolean;
}

/**
 * The log query (operation 2, docs/design.md#2-log-query): resolve sources, query them concurrently, merge newest
 * first, cut a page.
 */
export class LogQueryService {
  /** Sources queried at once across all requests of this process, handed out round-robin by organization. */
  private readonly gate: FairQueue;
  /** One per query in flight; shutdown aborts them all. */
  private readonly running = new Set<AbortController>();
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly tenancy: Tenancy,
    private readonly backendFor: BackendFor,
    private readonly options: LogQueryOptions,
  ) {
    // Bounds sources queried at once across all requests of this process.
    this.gate = new FairQueue({ max: Math.max(1, options.concurrency) * 4 });
  }

  async query(caller: Caller, req: LogQueryRequest, context: LogQueryContext = {}): Promise<LogQueryResult> {
    const { log } = context;
    const { window, filter, targets } = await this.resolve(caller, req);
    const limit = req.complete === true ? MAX_LIMIT : (req.limit ?? DEFAULT_LIMIT);

    const unsupported = new Set<string>();
    const units: Unit[] = [];
    for (const { backend, units: list } of this.plan(targets)) {
      const plan = planFilter(filter, backend.capabilities);
      plan.unsupported.forEach((u) => unsupported.add(u));
      for (const unitTargets of list) {
        units.push({
          backend,
          targets: unitTargets,
          effective: plan.effective,
          pushed: plan.pushed,
          exact: plan.exact,
        });
      }
    }

    const flow = requestFlow('log-query', req);
    return this.within(caller, targets, flow, context, async (signal, organizationId) => {
      const { results, missed } = await this.eachUnit(units, signal, organizationId, log, (unit, unitSignal) =>
        this.runUnit(unit, window, limit, unitSignal, log),
      );
      const ok = results.filter((r) => r !== undefined);
      const page = cutPage(ok, limit, window.startMs);
      return {
        rows: page.rows,
        resultCount: page.rows.length,
        nextEndTimeMs: page.nextEndTimeMs,
        partial: missed.size > 0,
        missedSources: [...missed],
        unsupported: [...unsupported],
      };
    });
  }

  /** The log histogram: the query's sources, filter and rules, counted per time bucket and level (histogram.ts). */
  histogram(caller: Caller, req: LogHistogramRequest, context: LogQueryContext = {}): Promise<LogHistogramResult> {
    return countHistogram(this, caller, req, context);
  }

  /**
   * The window, the filter and the sources of a request, checked in this order (the query's and the histogram's
   * errors are the same): window, filter, selector rules, then the sources, which the caller must be able to read.
   */
  async resolve(caller: Caller, req: LogQueryRequest): Promise<ResolvedRequest> {
    const window = parseWindow(req);
    const filter = req.filter === undefined ? TRUE : parseFilter(req.filter);
    checkSelectorRules(req);
    const targets =
      req.deploymentResourceId !== undefined
        ? await resolveDeploymentResourceTargets(this.db, caller, req.deploymentResourceId, this.tenancy)
        : await resolveInstanceTargets(this.db, caller, req, this.tenancy, this.options.logSources);
    return { window, filter, targets };
  }

  /** The targets by backend (provider), each split into the units that backend queries together. */
  plan(targets: LogTarget[]): { backend: LogBackend; units: LogTarget[][] }[] {
    const byProvider = new Map<ProviderKind, LogTarget[]>();
    for (const t of targets) byProvider.set(t.account.provider, [...(byProvider.get(t.account.provider) ?? []), t]);
    return [...byProvider].map(([provider, list]) => {
      const backend = this.backendFor(provider);
      return { backend, units: backend.units(list) };
    });
  }

  /**
   * Runs `work` as one request: one signal for it (client gone, the whole-query deadline, or shutdown) that reaches
   * every statement and upstream query, inside the process's budget of heavy work, in the line of its `flow`
   * (`requestFlow`: copies of one request wait in one line of the principal's share).
   */
  async within<T>(
    caller: Caller,
    targets: LogTarget[],
    flow: string,
    context: LogQueryContext,
    work: (signal: AbortSignal, organizationId: string) => Promise<T>,
  ): Promise<T> {
    const own = new AbortController();
    // Shutting down: a query that arrives now (on a connection still open) stops at once like the running ones,
    // rather than hold the shutdown for up to its deadline.
    if (this.closed) own.abort(new Error('shutting down'));
    const request = linkSignals([own.signal, context.signal], this.options.deadlineMs, 'the log query');
    this.running.add(own);
    try {
      // Counted in the share of the organization whose logs are read (a caller in several reads its first one's).
      const organizationId = targets[0]?.account.organizationId ?? caller.principalId;
      const run = () => work(request.signal, organizationId);
      const heavy = this.options.heavy;
      if (heavy === undefined || targets.length === 0) return await run();
      return await heavy.run(
        { organizationId, principalId: caller.principalId, flow },
        { signal: request.signal },
        run,
      );
    } finally {
      this.running.delete(own);
      request.dispose();
    }
  }

  /**
   * Runs `work` on every unit concurrently, within this process's limit and the fair gate, each with the source's
   * own time limit. A unit that fails or runs out of time answers undefined and has its log groups in `missed`, as
   * have the groups a unit reports it could not read; Berth's own database being down throws instead.
   */
  async eachUnit<U extends { targets: LogTarget[] }, R extends { missed?: string[] }>(
    units: U[],
    request: AbortSignal,
    organizationId: string,
    log: Logger | undefined,
    work: (unit: U, signal: AbortSignal) => Promise<R>,
  ): Promise<{ results: (R | undefined)[]; missed: Set<string> }> {
    const missed = new Set<string>();
    let outage: unknown;
    const local = concurrencyLimit(this.options.concurrency);
    const results = await Promise.all(
      units.map((unit) => {
        // The source's own time limit starts when its work does, not while it waits for a slot.
        const timeout = new AbortController();
        const unitSignal = linkSignals([request, timeout.signal]);
        const { signal } = unitSignal;
        // The slots are held until the unit's work has really stopped; the answer need not wait for that.
        const running = runLimited(local, signal, () =>
          this.gate.run({ group: organizationId }, { signal }, async () => {
            const timer = setTimeout(
              () => timeout.abort(new DeadlineError('the log source did not answer in time')),
              this.options.sourceTimeoutMs,
            );
            try {
              return await work(unit, signal);
            } finally {
              clearTimeout(timer);
            }
          }),
        ).finally(() => unitSignal.dispose());
        return untilAborted(running, signal).then(
          (result) => {
            const unread = result.missed ?? [];
            unread.forEach((g) => missed.add(g));
            if (unread.length > 0) log?.warn({ logGroups: unread }, 'log source returned rows it could not read');
            return result;
          },
          (error: unknown) => {
            // Berth's own database is down: that is an outage of Berth (503, retry), not a source to report missed.
            if (isDatabaseUnavailable(error)) outage ??= error;
            unit.targets.forEach((t) => missed.add(t.logGroup));
            const logGroups = unit.targets.map((t) => t.logGroup);
            if (error instanceof FilterBudgetError) {
              log?.warn(
                { logGroups, budgetMs: error.budgetMs },
                'log source missed: its filter ran past its CPU budget',
              );
            } else log?.warn({ err: error, logGroups }, 'log source could not be queried');
            return undefined;
          },
        );
      }),
    );
    if (outage !== undefined) throw outage;
    return { results, missed };
  }

  /**
   * Queries one unit with a time limit. The raw rows (those the backend
   * matched) set the coverage boundary; the rows kept are those that pass
   * the whole (effective) filter in process.
   */
  private async runUnit(
    unit: Unit,
    window: TimeWindow,
    limit: number,
    signal: AbortSignal,
    log: Logger | undefined,
  ): Promise<UnitResult<LogRow & { eventId: string }> & { missed: string[] }> {
    const missed = new Set<string>();
    let exact = unit.exact;
    const fetch = async (w: TimeWindow, n: number) => {
      const result = await unit.backend.fetch({
        targets: unit.targets,
        window: w,
        filter: unit.pushed,
        limit: n,
        signal,
      });
      result.missed?.forEach((g) => missed.add(g));
      if (result.exact !== true) exact = false;
      return result;
    };
    // One row more than the page: the rows above the oldest one fetched are then a full page when they exist.
    let { rows, exhausted } = await fetch(window, limit + 1);
    let coveredAfter = window.startMs - 1;
    if (!exhausted && rows.length > 0) {
      const oldest = rows[rows.length - 1]!.timestamp;
      coveredAfter = oldest;
      if (rows[0]!.timestamp === oldest) {
        // Every raw row shares one millisecond: read that millisecond whole, or paging could not move.
        const tie = await fetch({ startMs: oldest, endMs: oldest }, MAX_LIMIT + 1);
        rows = tie.rows;
        if (tie.exhausted) coveredAfter = oldest - 1;
      }
    }
    // What the backend could not apply runs in the filter pool, off the event loop, each log group (source) of the
    // unit within its own CPU budget: past it, that group is missed and its rows dropped. Rows the backend filtered
    // exactly are kept as they are.
    const passed =
      exact || rows.length === 0 || unit.effective.kind === 'all'
        ? rows
        : await this.filterByGroup(unit.effective, rows, missed, signal, log);
    const kept = passed.map((row): LogRow & { eventId: string } => {
      const target = attribute(unit.targets, row);
      return {
        timestamp: row.timestamp,
        level: row.level,
        message: row.message,
        logStream: row.logStream,
        sourceId: target?.sourceId ?? '',
        logSourceId: target?.logSourceId ?? '',
        eventId: row.eventId,
      };
    });
    return { rows: kept, coveredAfter, missed: [...missed] };
  }

  /** The rows that pass `filter`, each log group's in its own filter run; a group past its budget lands in `missed`. */
  private async filterByGroup(
    filter: FilterNode,
    rows: BackendRow[],
    missed: Set<string>,
    signal: AbortSignal,
    log: Logger | undefined,
  ): Promise<BackendRow[]> {
    const byGroup = new Map<string, BackendRow[]>();
    for (const row of rows) {
      const list = byGroup.get(row.logGroup);
      if (list === undefined) byGroup.set(row.logGroup, [row]);
      else list.push(row);
    }
    const kept = new Set<BackendRow>();
    for (const [group, list] of byGroup) {
      try {
        for (const row of await this.options.filters.start({ kind: 'tree', filter }).select(list, signal))
          kept.add(row);
      } catch (error) {
        if (!(error instanceof FilterBudgetError)) throw error;
        missed.add(group);
        log?.warn(
          { logGroup: group, budgetMs: error.budgetMs, beforeRunning: error.predicted },
          error.predicted
            ? 'log source missed: its filter would exceed its CPU budget on one of its messages'
            : 'log source missed: its filter ran past its CPU budget',
        );
      }
    }
    // Newest first, as the backend returned them.
    return rows.filter((row) => kept.has(row));
  }

  /** Shutdown: every query still running stops, reporting its unfinished sources as missed. */
  close(): void {
    this.closed = true;
    for (const c of this.running) c.abort(new Error('shutting down'));
  }
}

/**
 * `work`'s outcome, or the signal's reason as soon as it aborts: the request answers on time even
 * when a backend is slow to stop (`work` itself goes on holding its slots until it does).
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function parseWindow(req: LogQueryRequest): TimeWindow {
  const startMs = parseTime(req.startTime, 'startTime');
  const endMs = parseTime(req.endTime, 'endTime');
  if (startMs > endMs) {
    throw appError('logs:query:invalid-window', {
      description: 'startTime is after endTime.',
      metadata: { startTimeMs: startMs, endTimeMs: endMs },
    });
  }
  return { startMs, endMs };
}

/** The source a row answers for: the first target of its group whose streams include it. */
function attribute(targets: LogTarget[], row: BackendRow): LogTarget | undefined {
  return targets.find((t) => {
    if (t.logGroup !== row.logGroup) return false;
    switch (t.streams.kind) {
      case 'all':
        return true;
      case 'prefix':
        return row.logStream.startsWith(t.streams.prefix);
      case 'names':
        return t.streams.names.includes(row.logStream);
    }
  });
}
