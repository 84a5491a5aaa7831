import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Transaction } from 'kysely';
import type { Db, Executor } from '../db.js';
import type { Tables } from '../schema.js';
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
 * already stored is skipped (loading a fixture twice changes nothing). No quota
 * applies here (fixtures, the demo): the next ingest or sweep trims an
 * organization past it. Returns the events written.
 */
export async function insertLocalEvents(db: Executor, events: LocalEventInput[], now = Date.now()): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < events.length; i += CHUNK) inserted += await insertChunk(db, events.slice(i, i + CHUNK), now);
  return inserted;
}

/** One INSERT statement; the per-account counters follow through the triggers of migration 006. */
async function insertChunk(db: Executor, events: LocalEventInput[], now: number): Promise<number> {
  const rows = events.map((e) => {
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
  return Number(result.numAffectedRows ?? 0n);
}

// Advisory locks (two-key form: apart from the migration lock's single key). Quota work of one organization
// takes its organization's lock, so two requests of a tenant never both decide what to delete; it also takes the
// sweep lock shared, and each chunk of the retention sweep takes it exclusively: a sweep and a quota trim never
// delete the same rows in different orders (a deadlock), on any number of replicas.
const LOCK_CLASS_SWEEP = 0x62657231;
const LOCK_CLASS_ORGANIZATION = 0x62657232;

/**
 * Deletes by an ordered index scan whatever the planner's statistics say: PGlite has no autovacuum, so no
 * automatic ANALYZE either, and without statistics it chose a bitmap scan and a sort of the whole account
 * (300,000 rows: 670 ms instead of 13 ms).
 */
const ORDERED_SCANS_ONLY = sql`select set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`;

export interface QuotaChunkResult {
  /** Events written (an id already stored is skipped). */
  inserted: number;
  /** Oldest events of the organization deleted to make room. */
  deleted: number;
  /** Events still past the quota (only when more than `deleteLimit` had to go): trim with `trimOrganizationEvents`. */
  excess: number;
}

/**
 * Writes one chunk of events of one organization and, when that takes the organization past `maxEvents`,
 * deletes its oldest events (by timestamp, then event id; never another organization's) in the same
 * transaction: no other transaction sees it over its quota. At most `deleteLimit` rows are deleted here.
 * `maxEvents` 0: no quota.
 */
export async function insertEventsWithinQuota(
  db: Db,
  organizationId: string,
  events: LocalEventInput[],
  quota: { maxEvents: number; deleteLimit: number },
  now = Date.now(),
): Promise<QuotaChunkResult> {
  if (quota.maxEvents <= 0) return { inserted: await insertChunk(db, events, now), deleted: 0, excess: 0 };
  return db.transaction().execute(async (trx) => {
    const usage = await lockOrganization(trx, organizationId);
    const inserted = await insertChunk(trx, events, now);
    const excess = usage.events + inserted - quota.maxEvents;
    if (excess <= 0) return { inserted, deleted: 0, excess: 0 };
    const deleted = await deleteOldest(trx, usage.accounts, Math.min(excess, quota.deleteLimit));
    return { inserted, deleted, excess: deleted === 0 ? 0 : excess - deleted };
  });
}

/**
 * Deletes up to `deleteLimit` of an organization's oldest events while it has more than `maxEvents` (a quota
 * lowered by configuration, events loaded by `berth seed`). Returns what was deleted and what is still past it.
 */
export async function trimOrganizationEvents(
  db: Db,
  organizationId: string,
  quota: { maxEvents: number; deleteLimit: number },
): Promise<{ deleted: number; excess: number }> {
  return db.transaction().execute(async (trx) => {
    const usage = await lockOrganization(trx, organizationId);
    const excess = usage.events - quota.maxEvents;
    if (quota.maxEvents <= 0 || excess <= 0) return { deleted: 0, excess: 0 };
    const deleted = await deleteOldest(trx, usage.accounts, Math.min(excess, quota.deleteLimit));
    return { deleted, excess: deleted === 0 ? 0 : excess - deleted };
  });
}

/**
 * An account's stored events: its total plus the changes the triggers appended since the sweep last folded them
 * in (migration 006). UNION ALL of two plain selects: a filter on the account reaches both indexes.
 */
const ACCOUNT_COUNTS = sql`(select cloud_account_id, events from log_event_counts
    union all select cloud_account_id, events from log_event_count_changes)`;

/**
 * Takes the organization's locks and answers its accounts and its stored events (as committed: a transaction
 * writing its events still, `berth seed`, is counted once it commits, and trimmed by the next ingest or sweep).
 */
async function lockOrganization(
  trx: Transaction<Tables>,
  organizationId: string,
): Promise<{ accounts: string[]; events: number }> {
  await sql`select pg_advisory_xact_lock_shared(${LOCK_CLASS_SWEEP}, 0),
      pg_advisory_xact_lock(${LOCK_CLASS_ORGANIZATION}, hashtext(${organizationId}))`.execute(trx);
  // A statement of its own after the lock's: its snapshot, taken once the lock is held, sees what the
  // organization's transaction before this one committed.
  const usage = await sql<{ accounts: string[] | null; events: number | null }>`
    with accounts as (select id from cloud_accounts where organization_id = ${organizationId})
    select (select array_agg(id order by id) from accounts) as accounts,
      (select sum(events) from ${ACCOUNT_COUNTS} c where c.cloud_account_id in (select id from accounts)) as events
  `.execute(trx);
  const row = usage.rows[0];
  return { accounts: row?.accounts ?? [], events: Number(row?.events ?? 0) };
}

/** Deletes the `limit` oldest events (by timestamp, then event id) of these accounts together. */
async function deleteOldest(trx: Transaction<Tables>, accounts: string[], limit: number): Promise<number> {
  if (accounts.length === 0 || limit <= 0) return 0;
  await ORDERED_SCANS_ONLY.execute(trx);
  // Each account's oldest `limit` by its index, merged: never a sort of an account's whole history.
  const result = await sql`delete from log_events where seq in (
      select e.seq from unnest(${accounts}::text[]) as acc(id)
      cross join lateral (select seq, timestamp, event_id from log_events where cloud_account_id = acc.id
        order by timestamp, event_id limit ${limit}) e
      order by e.timestamp, e.event_id limit ${limit})`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

/** Organizations storing more than `maxEvents` events, with how many they store. */
export async function organizationsOverQuota(
  db: Executor,
  maxEvents: number,
): Promise<{ organizationId: string; events: number }[]> {
  if (maxEvents <= 0) return [];
  const rows = await sql<{ organization_id: string; events: number }>`select a.organization_id, sum(c.events) as events
      from ${ACCOUNT_COUNTS} c join cloud_accounts a on a.id = c.cloud_account_id
      group by a.organization_id having sum(c.events) > ${maxEvents} order by a.organization_id`.execute(db);
  return rows.rows.map((r) => ({ organizationId: r.organization_id, events: Number(r.events) }));
}

/** The organization's stored `local` events, from the counters (not a count of its rows). */
export async function countOrganizationEvents(db: Executor, organizationId: string): Promise<number> {
  const row = await sql<{ events: number | null }>`select sum(c.events) as events
      from ${ACCOUNT_COUNTS} c join cloud_accounts a on a.id = c.cloud_account_id
      where a.organization_id = ${organizationId}`.execute(db);
  return Number(row.rows[0]?.events ?? 0);
}

/** Stored `local` events of every organization, from the counters. */
export async function countStoredEvents(db: Executor): Promise<number> {
  const row = await sql<{ events: number | null }>`select sum(events) as events from ${ACCOUNT_COUNTS} c`.execute(db);
  return Number(row.rows[0]?.events ?? 0);
}

/**
 * Folds up to `limit` of the oldest count changes into the accounts' totals, in one statement (so no reader
 * sees them twice or not at all). Returns how many were folded. Safe on several replicas at once: a change row
 * is deleted, and added, by one of them only.
 */
export async function foldEventCountChanges(db: Executor, limit: number): Promise<number> {
  const result = await sql<{ folded: number }>`
    with moved as (delete from log_event_count_changes where seq in
        (select seq from log_event_count_changes order by seq limit ${limit})
      returning cloud_account_id, events),
    totals as (select cloud_account_id, sum(events)::bigint as events from moved group by cloud_account_id),
    folded as (insert into log_event_counts as c (cloud_account_id, events)
        select cloud_account_id, events from totals order by cloud_account_id
      on conflict (cloud_account_id) do update set events = c.events + excluded.events returning 1)
    select (select count(*) from moved) as folded`.execute(db);
  return Number(result.rows[0]?.folded ?? 0);
}

/**
 * One chunk of the retention sweep: of the `limit` events stored first (by `seq`), deletes those stored more than
 * `retentionMs` ago by the database's clock. `more`: some had expired and the chunk was full, so the next chunk may
 * hold expired events too; a chunk with none ends the sweep (rows are stored in `seq` order, give or take the
 * length of a transaction, so the expired ones come first). Chunks of concurrent sweeps (replicas) take turns on
 * the sweep lock.
 */
export async function deleteExpiredEvents(
  db: Db,
  retentionMs: number,
  limit: number,
): Promise<{ deleted: number; more: boolean }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${LOCK_CLASS_SWEEP}, 0)`.execute(trx);
    await ORDERED_SCANS_ONLY.execute(trx);
    const result = await sql<{ seen: number; deleted: number }>`
      with cutoff as (select (extract(epoch from now()) * 1000)::bigint - ${retentionMs}::bigint as ms),
      batch as materialized (select seq, stored_at from log_events order by seq limit ${limit}),
      gone as (delete from log_events where seq in
        (select seq from batch, cutoff where stored_at < cutoff.ms) returning 1)
      select (select count(*) from batch) as seen, (select count(*) from gone) as deleted`.execute(trx);
    const row = result.rows[0]!;
    return { deleted: Number(row.deleted), more: Number(row.deleted) > 0 && Number(row.seen) === limit };
  });
}

/**
 * PGlite runs no autovacuum: without this, deleted events keep their space and every insert grows the files, so
 * neither quota nor retention would bound the disk. Also refreshes the planner's statistics (no auto-ANALYZE
 * either). Holds the embedded database for its whole run: called rarely, after large deletions.
 */
export async function vacuumLogEvents(db: Executor): Promise<void> {
  await sql`vacuum (analyze) log_events, log_event_counts, log_event_count_changes, ingest_idempotency_keys`.execute(
    db,
  );
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

/**
 * The id of the `index`-th event of a request sent with an idempotency key (`requestDigest`: hex, from the
 * organization, the key and the request): the same on every retry, so a retry after a failure mid-way skips the
 * events already stored instead of storing them twice. Sorts by time, then by position in the request.
 */
export function idempotentEventId(timestamp: number, index: number, requestDigest: string): string {
  const ts = String(Math.max(0, Math.trunc(timestamp))).padStart(16, '0');
  return `${ts}${index.toString(16).padStart(5, '0')}${requestDigest.slice(0, 15)}`;
}
