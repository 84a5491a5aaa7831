import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../auth/caller.js';
import { appError } from '../../errors.js';
import type { LogBackend } from '../../providers/logs/types.js';
import { Semaphore } from '../../providers/logs/semaphore.js';
import type { Db } from '../../store/db.js';
import { matches, parseFilter, planFilter, TRUE, type FilterNode } from '../filter-tree/index.js';
import { resolveDeploymentResourceTargets } from './deployment-resource.js';
import { cutPage, type UnitResult } from './page.js';
import { checkSelectorRules, resolveInstanceTargets, type SourceSelection } from './resolve.js';
import { parseTime } from './time.js';
import type { BackendRow, LogQueryResult, LogRow, LogTarget, TimeWindow } from './types.js';

export const DEFAULT_LIMIT = 1000;
export const MAX_LIMIT = 10_000;

export interface LogQueryRequest extends SourceSelection {
  startTime: string | number;
  endTime: string | number;
  limit?: number;
  complete?: boolean;
  filter?: unknown;
}

export interface LogQueryOptions {
  sourceTimeoutMs: number;
  concurrency: number;
}

export type BackendFor = (provider: 'local' | 'aws') => LogBackend;

interface Unit {
  backend: LogBackend;
  targets: LogTarget[];
  effective: FilterNode;
  pushed: FilterNode;
}

/** The log query (spec endpoint 2): resolve sources, query them concurrently, merge newest first, cut a page. */
export class LogQueryService {
  private readonly gate: Semaphore;

  constructor(
    private readonly db: Db,
    private readonly backendFor: BackendFor,
    private readonly options: LogQueryOptions,
  ) {
    // Bounds sources queried at once across all requests of this process.
    this.gate = new Semaphore(Math.max(1, options.concurrency) * 4);
  }

  async query(caller: Caller, req: LogQueryRequest, log?: FastifyBaseLogger): Promise<LogQueryResult> {
    const window = parseWindow(req);
    const filter = req.filter === undefined ? TRUE : parseFilter(req.filter);
    checkSelectorRules(req);
    const limit = req.complete === true ? MAX_LIMIT : (req.limit ?? DEFAULT_LIMIT);
    const targets =
      req.deploymentResourceId !== undefined
        ? await resolveDeploymentResourceTargets(this.db, caller, req.deploymentResourceId)
        : await resolveInstanceTargets(this.db, caller, req);

    const unsupported = new Set<string>();
    const units: Unit[] = [];
    const byProvider = new Map<'local' | 'aws', LogTarget[]>();
    for (const t of targets) byProvider.set(t.account.provider, [...(byProvider.get(t.account.provider) ?? []), t]);
    for (const [provider, list] of byProvider) {
      const backend = this.backendFor(provider);
      const plan = planFilter(filter, backend.capabilities);
      plan.unsupported.forEach((u) => unsupported.add(u));
      for (const unitTargets of backend.units(list)) {
        units.push({ backend, targets: unitTargets, effective: plan.effective, pushed: plan.pushed });
      }
    }

    const missed = new Set<string>();
    const local = new Semaphore(Math.max(1, this.options.concurrency));
    const results = await Promise.all(
      units.map((unit) =>
        local.run(undefined, () =>
          this.gate.run(undefined, () => this.runUnit(unit, window, limit)).catch((error: unknown) => {
            unit.targets.forEach((t) => missed.add(t.logGroup));
            log?.warn({ err: error, logGroups: unit.targets.map((t) => t.logGroup) }, 'log source could not be queried');
            return undefined;
          }),
        ),
      ),
    );
    const ok = results.filter((r): r is UnitResult<LogRow & { eventId: string }> => r !== undefined);
    const page = cutPage(ok, limit, window.startMs);
    return {
      rows: page.rows,
      resultCount: page.rows.length,
      nextEndTimeMs: page.nextEndTimeMs,
      partial: missed.size > 0,
      missedSources: [...missed],
      unsupported: [...unsupported],
    };
  }

  /**
   * Queries one unit with a time limit. The raw rows (those the backend
   * matched) set the coverage boundary; the rows kept are those that pass
   * the whole (effective) filter in process.
   */
  private async runUnit(unit: Unit, window: TimeWindow, limit: number): Promise<UnitResult<LogRow & { eventId: string }>> {
    const signal = AbortSignal.timeout(this.options.sourceTimeoutMs);
    // The timeout holds even for a backend that cannot cancel its work (a database query).
    const fetch = (w: TimeWindow, n: number) =>
      untilAborted(unit.backend.fetch({ targets: unit.targets, window: w, filter: unit.pushed, limit: n, signal }), signal);
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
    const kept: (LogRow & { eventId: string })[] = [];
    for (const row of rows) {
      if (!matches(unit.effective, row)) continue;
      const target = attribute(unit.targets, row);
      kept.push({
        timestamp: row.timestamp,
        level: row.level,
        message: row.message,
        logStream: row.logStream,
        sourceId: target?.sourceId ?? '',
        logSourceId: target?.logSourceId ?? '',
        eventId: row.eventId,
      });
    }
    return { rows: kept, coveredAfter };
  }
}

/** `work`, or its rejection with the signal's reason as soon as the signal aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
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
