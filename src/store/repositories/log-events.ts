import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor } from '../db.js';
import { deriveLevel, parseJsonMessage } from '../../core/log-level.js';

export interface LocalEventInput {
  cloudAccountId: string;
  region: string;
  logGroup: string;
  logStream: string;
  timestamp: number;
  message: string;
  ingestionTime?: number;
  eventId?: string;
}

const CHUNK = 5000;

/**
 * Writes events of `local` accounts, deriving level and the parsed JSON at
 * ingest so queries can filter on them with indexes. An event whose id is
 * already stored is skipped (loading a fixture twice changes nothing).
 */
export async function insertLocalEvents(db: Executor, events: LocalEventInput[], now = Date.now()): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < events.length; i += CHUNK) {
    const rows = events.slice(i, i + CHUNK).map((e) => {
      // PostgreSQL text cannot hold NUL: it is kept visible as U+FFFD rather than failing the batch.
      const message = e.message.includes('\u0000') ? e.message.replace(/\u0000/g, '\ufffd') : e.message;
      const json = parseJsonMessage(message);
      return {
        cloud_account_id: e.cloudAccountId,
        region: e.region,
        log_group: e.logGroup,
        log_stream: e.logStream,
        timestamp: e.timestamp,
        ingestion_time: e.ingestionTime ?? now,
        event_id: e.eventId ?? newEventId(e.timestamp),
        message,
        level: deriveLevel(message, json),
        // The message's own text, so jsonb keeps numbers JSON.stringify would lose (1e400).
        json: json === undefined ? null : message,
      };
    });
    // One array parameter per column: a 5,000-row batch is one short statement, not 50,000 parameters.
    const col = <K extends keyof (typeof rows)[number]>(k: K) => rows.map((r) => r[k]);
    const result = await sql`insert into log_events
        (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level, json)
      select * from unnest(${col('cloud_account_id')}::text[], ${col('region')}::text[], ${col('log_group')}::text[],
        ${col('log_stream')}::text[], ${col('timestamp')}::bigint[], ${col('ingestion_time')}::bigint[],
        ${col('event_id')}::text[], ${col('message')}::text[], ${col('level')}::text[], ${col('json')}::jsonb[])
      on conflict (cloud_account_id, region, log_group, event_id) do nothing`.execute(db);
    inserted += Number(result.numAffectedRows ?? 0n);
  }
  return inserted;
}

/** Whether the account has any event later than `afterMs` (in any region or group). */
export async function hasEventsAfter(db: Executor, cloudAccountId: string, afterMs: number): Promise<boolean> {
  const row = await db
    .selectFrom('log_events')
    .select(sql<number>`1`.as('one'))
    .where('cloud_account_id', '=', cloudAccountId)
    .where('timestamp', '>', afterMs)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

const processTag = randomBytes(4).toString('hex');
let sequence = 0;

/**
 * A fresh id that sorts by time, then by arrival in this process: events
 * written in one millisecond keep their order (ties are ordered by event id).
 */
export function newEventId(timestamp: number): string {
  sequence = (sequence + 1) % 0x1000000000000;
  const ts = String(Math.max(0, Math.trunc(timestamp))).padStart(16, '0');
  return `${ts}${sequence.toString(16).padStart(12, '0')}${processTag}`;
}

/** A stable id for an event that has none, so re-loading the same data is idempotent. */
export function stableEventId(e: Omit<LocalEventInput, 'eventId'>, occurrence: number): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([e.cloudAccountId, e.region, e.logGroup, e.logStream, e.timestamp, e.message, occurrence]))
    .digest('hex')
    .slice(0, 16);
  return `${String(Math.max(0, Math.trunc(e.timestamp))).padStart(16, '0')}${digest}`;
}
