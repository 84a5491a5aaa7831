import { sql } from 'kysely';
import type { Db } from '../../store/db.js';
import { streamCondition } from '../../providers/logs/local.js';
import type { HistoryCursor, StreamEvent, StreamQuery, StreamSource } from './types.js';

/**
 * Tail position in the local event table. `seq` grows with every insert, but
 * on PostgreSQL concurrent transactions may commit out of order. So `low`
 * only moves up to a seq that was the table's maximum GRACE_MS ago (every
 * transaction below it has committed by then), and the newer rows already
 * delivered are remembered in `seen`: no repeat, and a late commit below
 * them is still found.
 */
export interface LocalCursor {
  low: number;
  seen: number[];
}

const GRACE_MS = 2_000;
const READ_LIMIT = 10_000;

interface Row {
  seq: number;
  log_stream: string;
  message: string;
  timestamp: number;
  ingestion_time: number;
  event_id: string;
  level: string;
}

const toEvent = (r: Row): StreamEvent => ({
  eventId: r.event_id,
  logStreamName: r.log_stream,
  message: r.message,
  timestamp: Number(r.timestamp),
  ingestionTime: Number(r.ingestion_time),
  level: r.level,
});

interface ReadBatch {
  rows: Row[];
  /** A seq every transaction below which has committed. */
  settled: number;
  /** The read hit its limit: rows above the last one were not read. */
  truncated: boolean;
}

export class LocalStreamSource implements StreamSource<LocalCursor> {
  /** (time, max seq) samples, to tell which seqs have settled. */
  private samples: { at: number; seq: number }[] = [];

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  private scope(q: StreamQuery) {
    return sql`cloud_account_id = ${q.account.id} and region = ${q.region}
      and log_group in (${sql.join(q.logGroups)}) and ${streamCondition(q.streams)}`;
  }

  private async maxSeq(): Promise<number> {
    const r = await sql<{ seq: number | null }>`select max(seq) as seq from log_events`.execute(this.db);
    return Number(r.rows[0]?.seq ?? 0);
  }

  private settledSeq(latest: number): number {
    const now = this.now();
    this.samples.push({ at: now, seq: latest });
    let settled = 0;
    while (this.samples.length > 1 && this.samples[1]!.at <= now - GRACE_MS) this.samples.shift();
    if (this.samples[0]!.at <= now - GRACE_MS) settled = this.samples[0]!.seq;
    return settled;
  }

  async tailStart(): Promise<LocalCursor> {
    return { low: await this.maxSeq(), seen: [] };
  }

  async *history(
    q: StreamQuery,
    window: { startMs: number; endMs: number },
    after: HistoryCursor | undefined,
    switchPoint: LocalCursor | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]> {
    // History is what was there when the stream began: nothing past the switch point.
    const ceiling = switchPoint === undefined ? undefined : Math.max(switchPoint.low, ...switchPoint.seen);
    let cursor = after;
    for (;;) {
      if (signal.aborted) return;
      const rows = await sql<Row>`select seq, log_stream, message, timestamp, ingestion_time, event_id, level from log_events
        where ${this.scope(q)} and timestamp >= ${window.startMs} and timestamp <= ${window.endMs}
          ${ceiling === undefined ? sql`` : sql`and seq <= ${ceiling}`}
          ${cursor === undefined ? sql`` : sql`and (timestamp, event_id) > (${cursor.ts}, ${cursor.id})`}
        order by timestamp, event_id limit ${batchSize}`.execute(this.db);
      if (rows.rows.length === 0) return;
      const last = rows.rows[rows.rows.length - 1]!;
      cursor = { ts: Number(last.timestamp), id: last.event_id };
      yield rows.rows.filter((r) => q.matches(r.message)).map(toEvent);
      if (rows.rows.length < batchSize) return;
    }
  }

  async read(q: StreamQuery, cursors: LocalCursor[]): Promise<ReadBatch> {
    const latest = await this.maxSeq();
    const from = Math.min(...cursors.map((c) => c.low));
    const result = await sql<Row>`select seq, log_stream, message, timestamp, ingestion_time, event_id, level from log_events
      where seq > ${from} and seq <= ${latest} and ${this.scope(q)} order by seq limit ${READ_LIMIT}`.execute(this.db);
    const rows = result.rows.filter((r) => q.matches(r.message)).map((r) => ({ ...r, seq: Number(r.seq) }));
    const truncated = result.rows.length === READ_LIMIT;
    const lastRead = truncated ? Number(result.rows[result.rows.length - 1]!.seq) : latest;
    return { rows, settled: Math.min(this.settledSeq(latest), lastRead), truncated };
  }

  advance(
    cursor: LocalCursor,
    batch: unknown,
    startMs: number,
    limit = Number.POSITIVE_INFINITY,
  ): { events: StreamEvent[]; cursor: LocalCursor; more: boolean } {
    const { rows, settled } = batch as ReadBatch;
    const seen = new Set(cursor.seen);
    const events: StreamEvent[] = [];
    // Rows are in seq order: start past the cursor's floor; stop before the first row past `limit` events.
    let lo = 0;
    for (let hi = rows.length; lo < hi; ) {
      const mid = (lo + hi) >>> 1;
      if (rows[mid]!.seq <= cursor.low) lo = mid + 1;
      else hi = mid;
    }
    let stoppedAt: number | undefined;
    for (let i = lo; i < rows.length; i++) {
      const r = rows[i]!;
      if (seen.has(r.seq)) continue;
      if (events.length >= limit) {
        stoppedAt = r.seq;
        break;
      }
      seen.add(r.seq);
      if (Number(r.timestamp) >= startMs) events.push(toEvent(r));
    }
    // Stopped early: every row of this read below `stoppedAt` was examined, the rest was not.
    const low = Math.max(cursor.low, stoppedAt === undefined ? settled : Math.min(settled, stoppedAt - 1));
    return { events, cursor: { low, seen: [...seen].filter((s) => s > low) }, more: stoppedAt !== undefined };
  }

  compact(cursor: LocalCursor): unknown {
    return { l: Math.max(cursor.low, ...cursor.seen) };
  }

  restore(value: unknown): LocalCursor | undefined {
    const l = (value as { l?: unknown } | null)?.l;
    return typeof l === 'number' && Number.isSafeInteger(l) && l >= 0 ? { low: l, seen: [] } : undefined;
  }
}
