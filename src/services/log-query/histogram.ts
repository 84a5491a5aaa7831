import type { Caller } from '../../core/caller.js';
import type { LogHistogramBody } from '../../core/schemas/log-histogram.js';
import type { FilterNode } from '../../core/filter-tree/index.js';
import {
  bucketLayout,
  DEFAULT_BUCKETS,
  histogramBuckets,
  planAggregateFilter,
  type BucketCount,
  type LogHistogramResult,
} from '../../core/log-query/histogram.js';
import type { LogTarget, TimeWindow } from '../../core/log-query/types.js';
import type { Logger } from '../../core/logger.js';
import type { HistogramResult, LogBackend } from '../../providers/log-query/port.js';
import { requestFlow } from '../../core/request-flow.js';

export type { LogHistogramResult } from '../../core/log-query/histogram.js';

/**
 * The log query's body (its `limit` and `complete` accepted and ignored) and the number of buckets, as the route
 * validated it (`LogHistogramBody`).
 */
export type LogHistogramRequest = LogHistogramBody;

/** What the histogram shares with the log query (`LogQueryService`): sources, units, deadline, gates. */
export interface HistogramHost {
  resolve(
    caller: Caller,
    req: LogHistogramRequest,
  ): Promise<{ window: TimeWindow; filter: FilterNode; targets: LogTarget[] }>;
  plan(targets: LogTarget[]): { backend: LogBackend; units: LogTarget[][] }[];
  within<T>(
    caller: Caller,
    targets: LogTarget[],
    flow: string,
    context: { signal?: AbortSignal },
    work: (signal: AbortSignal, organizationId: string) => Promise<T>,
  ): Promise<T>;
  eachUnit<U extends { targets: LogTarget[] }, R extends { missed?: string[] }>(
    units: U[],
    request: AbortSignal,
    organizationId: string,
    log: Logger | undefined,
    work: (unit: U, signal: AbortSignal) => Promise<R>,
  ): Promise<{ results: (R | undefined)[]; missed: Set<string> }>;
}

interface HistogramUnit {
  backend: LogBackend;
  targets: LogTarget[];
  filter: FilterNode;
}

/**
 * Counts the rows the log query would return for the same body, per time bucket and level: the same sources,
 * selector rules and errors, per-source time limit, whole-query deadline, heavy-work budget and fair gate, and the
 * same `partial`/`missedSources` when a source fails. Each unit is one aggregate in its backend; a filter leaf the
 * backend cannot evaluate there (a regex on `local`, a level on `aws`) is dropped soundly, so counts are then those
 * of a superset of the rows, and `unsupported` names the leaf's path.
 */
export async function countHistogram(
  host: HistogramHost,
  caller: Caller,
  req: LogHistogramRequest,
  context: { signal?: AbortSignal; log?: Logger } = {},
): Promise<LogHistogramResult> {
  const { window, filter, targets } = await host.resolve(caller, req);
  const layout = bucketLayout(window, req.buckets ?? DEFAULT_BUCKETS);

  const unsupported = new Set<string>();
  const units: HistogramUnit[] = [];
  for (const { backend, units: list } of host.plan(targets)) {
    const plan = planAggregateFilter(filter, backend.capabilities);
    plan.unsupported.forEach((u) => unsupported.add(u));
    for (const unitTargets of list) units.push({ backend, targets: unitTargets, filter: plan.filter });
  }

  return host.within(caller, targets, requestFlow('log-histogram', req), context, async (signal, organizationId) => {
    const { results, missed } = await host.eachUnit(
      units,
      signal,
      organizationId,
      context.log,
      (unit, unitSignal): Promise<HistogramResult> =>
        unit.backend.histogram({ targets: unit.targets, layout, filter: unit.filter, signal: unitSignal }),
    );
    const counts: BucketCount[] = [];
    for (const result of results) {
      if (result === undefined) continue;
      counts.push(...result.counts);
      result.inexact?.forEach((u) => unsupported.add(u));
    }
    return {
      buckets: histogramBuckets(layout, counts),
      partial: missed.size > 0,
      missedSources: [...missed],
      unsupported: [...unsupported],
    };
  });
}
