import type { CompiledQuery } from 'kysely';
import { sqlCapabilities, type FilterNode, type SqlBounds } from '../../core/filter-tree/index.js';
import { byAccountAndRegion, type LogTarget } from '../../core/log-query/types.js';
import type { Db } from '../../store/db.js';
import { logQueryStatement, queryLogEvents, type LogQueryEventRow } from '../../store/repositories/log-query-events.js';
import type { StatementRunner } from '../../store/statement-runner.js';
import type { FetchRequest, FetchResult, LogBackend } from '../log-backend.js';

/** Sources of one account and region go in one statement: a lateral index scan per log group. */
const MAX_TARGETS_PER_UNIT = 100;

/** Log events of `local` accounts, stored in Berth's own database; the filter is pushed down within `bounds`. */
export class LocalLogBackend implements LogBackend {
  readonly capabilities = sqlCapabilities;

  constructor(
    private readonly db: Db,
    private readonly run: StatementRunner,
    private readonly bounds: SqlBounds,
  ) {}

  units(targets: LogTarget[]): LogTarget[][] {
    const units: LogTarget[][] = [];
    for (const group of byAccountAndRegion(targets)) {
      for (let i = 0; i < group.length; i += MAX_TARGETS_PER_UNIT) units.push(group.slice(i, i + MAX_TARGETS_PER_UNIT));
    }
    return units;
  }

  /** The statement `fetch` runs for one unit (benchmarks run it on its own). */
  statement(request: Omit<FetchRequest, 'signal'>): CompiledQuery<LogQueryEventRow> {
    return logQueryStatement(this.db, request, this.bounds);
  }

  async fetch(request: FetchRequest): Promise<FetchResult> {
    if (request.targets.length === 0 || isFalse(request.filter)) return { rows: [], exhausted: true };
    const rows = await queryLogEvents(this.db, this.run, request, this.bounds);
    return { rows, exhausted: rows.length < request.limit };
  }
}

function isFalse(node: FilterNode): boolean {
  return node.kind === 'not' && node.node.kind === 'all';
}
