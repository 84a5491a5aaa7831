import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import {
  compileBoundedSqlFilter,
  sqlCapabilities,
  sqlSize,
  type FilterNode,
  type SqlBounds,
} from '../../core/filter-tree/index.js';
import type { Level } from '../../core/log-level.js';
import { byAccountAndRegion, type BackendRow, type LogTarget } from '../../core/log-query/types.js';
import type { Db } from '../../store/db.js';
import type { StatementRunner } from '../../store/statement-runner.js';
import type { FetchRequest, FetchResult, LogBackend } from '../log-backend.js';

/** Sources of one account and region go in one statement: a lateral index scan per log group. */
const MAX_TARGETS_PER_UNIT = 100;

interface EventRow {
  timestamp: number;
  message: string;
  log_group: string;
  log_stream: string;
  event_id: string;
  level: string;
  json: unknown;
}

/** The streams one branch of the statement reads in its log group: the union of the sources' selectors. */
interface GroupScope {
  name: string;
  all_streams: boolean;
  prefixes: string[];
  names: string[];
}

function groupScopes(targets: LogTarget[]): GroupScope[] {
  const scopes = new Map<string, GroupScope>();
  for (const t of targets) {
    let scope = scopes.get(t.logGroup);
    if (scope === undefined) {
      scope = { name: t.logGroup, all_streams: false, prefixes: [], names: [] };
      scopes.set(t.logGroup, scope);
    }
    if (t.streams.kind === 'all') scope.all_streams = true;
    else if (t.streams.kind === 'prefix') scope.prefixes.push(t.streams.prefix);
    else scope.names.push(...t.streams.names);
  }
  return [...scopes.values()];
}

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

  /**
   * One statement whatever the number of groups: the groups and their stream selectors travel as one
   * jsonb parameter, and the filter appears once, inside a lateral subquery that is an index scan on
   * (account, region, group, timestamp desc, event_id desc) stopping at `limit` matching rows per group.
   */
  statement({ targets, window, filter, limit }: Omit<FetchRequest, 'signal'>): CompiledQuery<EventRow> {
    const first = targets[0]!;
    const frame = (
      predicate: RawBuilder<boolean>,
    ) => sql<EventRow>`select e.timestamp, e.message, e.log_group, e.log_stream, e.event_id, e.level, e.json
      from jsonb_to_recordset(${JSON.stringify(groupScopes(targets))}::jsonb)
        as g(name text, all_streams boolean, prefixes text[], names text[])
      cross join lateral (
        select timestamp, message, log_group, log_stream, event_id, level, json from log_events
        where cloud_account_id = ${first.account.id} and region = ${first.region} and log_group = g.name
          and timestamp >= ${window.startMs} and timestamp <= ${window.endMs}
          and (g.all_streams or log_stream = any(g.names)
            or exists (select 1 from unnest(g.prefixes) as p(prefix) where starts_with(log_stream, p.prefix)))
          and ${predicate}
        order by timestamp desc, event_id desc limit ${limit}
      ) e
      order by e.timestamp desc, e.event_id desc limit ${limit}`;
    const overhead = sqlSize(frame(sql<boolean>`true`));
    const { where } = compileBoundedSqlFilter(filter, {
      maxParams: this.bounds.maxParams - overhead.params,
      maxBytes: this.bounds.maxBytes - overhead.bytes,
    });
    return frame(where).compile(this.db);
  }

  async fetch(request: FetchRequest): Promise<FetchResult> {
    if (request.targets.length === 0 || isFalse(request.filter)) return { rows: [], exhausted: true };
    const result = await this.run(this.statement(request), request.signal);
    const rows: BackendRow[] = result.map((r) => ({
      timestamp: Number(r.timestamp),
      message: r.message,
      logGroup: r.log_group,
      logStream: r.log_stream,
      eventId: r.event_id,
      level: r.level as Level,
      json: r.json ?? undefined,
    }));
    return { rows, exhausted: result.length < request.limit };
  }
}

function isFalse(node: FilterNode): boolean {
  return node.kind === 'not' && node.node.kind === 'all';
}
