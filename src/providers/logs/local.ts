import { sql, type RawBuilder } from 'kysely';
import { compileSqlFilter, sqlCapabilities, type FilterNode } from '../../logs/filter-tree/index.js';
import type { Level } from '../../logs/level.js';
import { byAccountAndRegion, type BackendRow, type LogTarget, type StreamSelector } from '../../logs/query/types.js';
import type { Db } from '../../store/db.js';
import type { FetchRequest, FetchResult, LogBackend } from './types.js';

/** Sources of one account and region go in one statement: a UNION ALL of per-group index scans. */
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

export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export function streamCondition(streams: StreamSelector): RawBuilder<boolean> {
  switch (streams.kind) {
    case 'all':
      return sql<boolean>`true`;
    case 'prefix':
      return sql<boolean>`log_stream like ${likePrefix(streams.prefix)}`;
    case 'names':
      return streams.names.length === 0 ? sql<boolean>`false` : sql<boolean>`log_stream in (${sql.join(streams.names)})`;
  }
}

/** Log events of `local` accounts, stored in Berth's own database; the whole filter tree is pushed down. */
export class LocalLogBackend implements LogBackend {
  readonly capabilities = sqlCapabilities;

  constructor(private readonly db: Db) {}

  units(targets: LogTarget[]): LogTarget[][] {
    const units: LogTarget[][] = [];
    for (const group of byAccountAndRegion(targets)) {
      for (let i = 0; i < group.length; i += MAX_TARGETS_PER_UNIT) units.push(group.slice(i, i + MAX_TARGETS_PER_UNIT));
    }
    return units;
  }

  async fetch({ targets, window, filter, limit }: FetchRequest): Promise<FetchResult> {
    const first = targets[0];
    if (first === undefined || isFalse(filter)) return { rows: [], exhausted: true };
    const predicate = compileSqlFilter(filter);
    // One branch per log group (sources sharing a group are OR-ed, so no event comes twice); each
    // is an index scan on (account, region, group, timestamp desc, event_id desc) that stops at `limit`.
    const byGroup = new Map<string, StreamSelector[]>();
    for (const t of targets) byGroup.set(t.logGroup, [...(byGroup.get(t.logGroup) ?? []), t.streams]);
    const branches = [...byGroup].map(
      ([group, selectors]) => sql`(select timestamp, message, log_group, log_stream, event_id, level, json from log_events
        where cloud_account_id = ${first.account.id} and region = ${first.region} and log_group = ${group}
          and timestamp >= ${window.startMs} and timestamp <= ${window.endMs}
          and (${sql.join(selectors.map(streamCondition), sql` or `)}) and ${predicate}
        order by timestamp desc, event_id desc limit ${limit})`,
    );
    const result = await sql<EventRow>`select * from (${sql.join(branches, sql` union all `)}) u
      order by timestamp desc, event_id desc limit ${limit}`.execute(this.db);
    const rows: BackendRow[] = result.rows.map((r) => ({
        timestamp: Number(r.timestamp),
        message: r.message,
        logGroup: r.log_group,
        logStream: r.log_stream,
        eventId: r.event_id,
        level: r.level as Level,
        json: r.json ?? undefined,
    }));
    return { rows, exhausted: result.rows.length < limit };
  }
}

function isFalse(node: FilterNode): boolean {
  return node.kind === 'not' && node.node.kind === 'all';
}
