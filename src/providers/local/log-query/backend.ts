import type { CompiledQuery } from 'kysely';
import { sqlCapabilities, type FilterNode, type SqlBounds } from '../../../core/filter-tree/index.js';
import type { BucketCount } from '../../../core/log-query/histogram.js';
import { LEVELS, type Level } from '../../../core/log-level.js';
import { byAccountAndRegion, type LogTarget } from '../../../core/log-query/types.js';
import type { Db } from '../../../store/db.js';
import { mergedPage } from '../../../store/repositories/log-event-slices.js';
import {
  everyRowScan,
  keepsEveryRow,
  logQueryStatement,
  queryLanes,
  queryLogEventsSliced,
  type LogQueryEventRow,
} from '../../../store/log-query/events.js';
import { countLogEventsSliced } from '../../../store/log-query/histogram-events.js';
import type { SliceSizing } from '../../../store/slices.js';
import type { StatementRunner } from '../../../store/statement-runner.js';
import type { FetchRequest, FetchResult, HistogramRequest, HistogramResult, LogBackend } from '../../log-query/port.js';

const KNOWN_LEVELS: ReadonlySet<string> = new Set(LEVELS);

/** Sources of one account and region go in one statement: a lateral index scan per log group. */
const MAX_TARGETS_PER_UNIT = 100;

/** DB_SLICE_MS's default, for a backend built without one. */
const DEFAULT_SLICE_MS = 50;

/**
 * Log events of `local` accounts, stored in Berth's own database; the filter is pushed down within `bounds`.
 * A unit is read in slices of about `sizing.sliceMs` each (DB_SLICE_MS), so no statement of a heavy query
 * holds the database long.
 */
export class LocalLogBackend implements LogBackend {
  readonly capabilities = sqlCapabilities;
  private readonly sizing: SliceSizing;

  constructor(
    private readonly db: Db,
    private readonly run: StatementRunner,
    private readonly bounds: SqlBounds,
    sizing: Partial<SliceSizing> = {},
  ) {
    this.sizing = { ...sizing, sliceMs: sizing.sliceMs ?? DEFAULT_SLICE_MS };
  }

  units(targets: LogTarget[]): LogTarget[][] {
    const units: LogTarget[][] = [];
    for (const group of byAccountAndRegion(targets)) {
      for (let i = 0; i < group.length; i += MAX_TARGETS_PER_UNIT) units.push(group.slice(i, i + MAX_TARGETS_PER_UNIT));
    }
    return units;
  }

  /**
   * One statement returning what `fetch` returns for one unit (benchmarks run it on its own, and compare
   * Berth's page with its rows); `fetch` reads the same rows in slices.
   */
  statement(request: Omit<FetchRequest, 'signal'>): CompiledQuery<LogQueryEventRow> {
    const lanes = queryLanes(request.targets, request.filter);
    if (keepsEveryRow(lanes, request.filter))
      return mergedPage(everyRowScan(request.targets, lanes, request.window), undefined, request.limit);
    return logQueryStatement(this.db, request, this.bounds);
  }

  async fetch(request: FetchRequest): Promise<FetchResult> {
    if (request.targets.length === 0 || isFalse(request.filter)) return { rows: [], exhausted: true };
    const report = { relaxed: 0 };
    const rows = await queryLogEventsSliced(this.db, this.run, request, this.bounds, this.sizing, report);
    return { rows, exhausted: rows.length < request.limit, exact: report.relaxed === 0 };
  }

  /**
   * The unit's aggregate, read in slices like the query's rows: `signal` (the source's time limit, the request's
   * deadline, the client gone) cancels the running statement on PostgreSQL and stops the read at the next slice.
   */
  async histogram({ targets, layout, filter, signal }: HistogramRequest): Promise<HistogramResult> {
    if (targets.length === 0 || isFalse(filter)) return { counts: [] };
    const { counts: rows, relaxed } = await countLogEventsSliced(
      this.db,
      this.run,
      { targets, layout, filter, signal },
      this.bounds,
      this.sizing,
    );
    const counts: BucketCount[] = rows.map((r) => ({
      bucket: r.bucket,
      // The column holds what ingest derived; anything else is no level Berth knows.
      level: KNOWN_LEVELS.has(r.level) ? (r.level as Level) : 'UNKNOWN',
      count: r.n,
    }));
    if (relaxed === 0) return { counts };
    return {
      counts,
      inexact: [
        `filter: too large for one statement of the local log store (MAX_SQL_PARAMS, MAX_SQL_BYTES): ${relaxed} predicate(s) were left out of the histogram, whose counts include rows they would exclude`,
      ],
    };
  }
}

function isFalse(node: FilterNode): boolean {
  return node.kind === 'not' && node.node.kind === 'all';
}
