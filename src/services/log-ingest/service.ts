import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../../config.js';
import { canRead, canWrite, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import {
  countStoredEvents,
  deleteExpiredEvents,
  foldEventCountChanges,
  idempotentEventId,
  insertEventsWithinQuota,
  type LocalEventInput,
  newEventId,
  organizationsOverQuota,
  trimOrganizationEvents,
  vacuumLogEvents,
} from '../../store/log-ingest/events.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  releaseIdempotencyKey,
} from '../../store/log-ingest/idempotency.js';
import { epochMsOf, invalidTime } from '../../core/log-time.js';
import type { Db } from '../../store/db.js';
import type { HeavyWork } from '../heavy-work.js';
import { findCloudAccount } from '../../store/repositories/cloud-accounts.js';

import { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST } from '../../core/schemas/log-ingest.js';

export { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST };

/** The settings ingest reads (README "Limits"). */
export type IngestConfig = Pick<
  Config,
  'INGEST_MAX_EVENTS_PER_ORG' | 'INGEST_RETENTION_MS' | 'INGEST_IDEMPOTENCY_TTL_MS' | 'DB_SLICE_MS'
>;

export interface IngestServiceOptions {
  /** The process's budget of heavy work: an ingest request is one piece of it, in its organization's share. */
  heavy?: HeavyWork;
  /** PGlite: it runs no autovacuum, so the sweep vacuums after large deletions (else the disk only grows). */
  embedded?: boolean;
}

export interface IngestOptions {
  /** The request's `Idempotency-Key`: a retry with the same key and request is stored once. */
  idempotencyKey?: string;
}

export interface IngestResult {
  accepted: number;
  /** The answer of an earlier request with the same idempotency key: nothing was stored this time. */
  replayed: boolean;
}

export interface SweepResult {
  /** Count changes folded into the per-account totals. */
  folded: number;
  /** Events deleted because they were stored longer ago than the retention window. */
  expired: number;
  /** Events deleted from organizations past their quota (a lowered quota, `berth seed`). */
  trimmed: number;
  /** Expired idempotency keys deleted. */
  keys: number;
  vacuumed: boolean;
}

/**
 * How long a claim on an idempotency key holds while its request stores events: past it (the holder crashed), a
 * retry takes over. Longer than any ingest takes (the heavy-work queue, then at most 10,000 events in slices).
 */
const IDEMPOTENCY_LEASE_MS = 60_000;
/** Count changes (one per statement that wrote or deleted an account's events) folded per statement. */
const FOLD_LIMIT = 10_000;
/** PGlite: vacuum once this many events (or a tenth of those stored, if more) were deleted since the last time. */
const VACUUM_AFTER_DELETED = 10_000;

/**
 * Writes events into a `local` cloud account: the embedded default's way in for logs. Each organization stores
 * at most `INGEST_MAX_EVENTS_PER_ORG` events (its oldest go first), events stored longer ago than
 * `INGEST_RETENTION_MS` are swept, and a request with an idempotency key is stored once however often it is sent.
 */
export class LogIngestService {
  private readonly sizer: ChunkSizer;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<SweepResult> | undefined;
  private closed = false;
  private deletedSinceVacuum = 0;

  constructor(
    private readonly db: Db,
    private readonly config: IngestConfig,
    private readonly options: IngestServiceOptions = {},
  ) {
    this.sizer = new ChunkSizer(config.DB_SLICE_MS);
  }

  /** Rows one delete statement (a quota trim, a sweep chunk) removes at most: about one slice of the database. */
  private get deleteLimit(): number {
    return Math.max(100, Math.round(this.config.DB_SLICE_MS * 40));
  }

  async ingest(
    caller: Caller | null,
    target: IngestTarget,
    events: IngestEvent[],
    options: IngestOptions = {},
  ): Promise<IngestResult> {
    const now = Date.now();
    // Checked before anything is read, like the route's schema: the schema bounds integers, but an ISO
    // string's offset can still carry it past the range (and the CLI calls this without the route).
    const given = events.map((e, i) => {
      if (e.timestamp === undefined) return undefined;
      const ms = epochMsOf(e.timestamp);
      if (Number.isNaN(ms)) throw invalidTime(`body.events[${i}].timestamp`);
      return ms;
    });
    const organizationId = await this.writableAccountOwner(caller, target);
    if (events.length > MAX_EVENTS_PER_INGEST) {
      throw appError('logs:ingest:too-large', { description: `At most ${MAX_EVENTS_PER_INGEST} events per request.` });
    }
    const request: IngestRequest = { organizationId, principalId: caller?.principalId, target, events, given };
    if (options.idempotencyKey !== undefined) return this.ingestOnce(request, options.idempotencyKey, now);
    await this.asHeavyWork(request, () => this.store(organizationId, rowsOf(request, now, newEventId)));
    return { accepted: events.length, replayed: false };
  }

  /** The organization owning the target account, if the caller may write there (the CLI may: `null`). */
  private async writableAccountOwner(caller: Caller | null, target: IngestTarget): Promise<string> {
    const account = await findCloudAccount(this.db, target.accountId);
    // Another organization's account answers like a missing one.
    if (account === undefined || (caller !== null && !canRead(caller, account.organizationId))) {
      throw appError('logs:account:not-found');
    }
    if (caller !== null && !canWrite(caller, account.organizationId)) throw appError('auth:permission:denied');
    if (account.provider !== 'local') {
      throw appError('logs:account:not-local', {
        metadata: { accountId: target.accountId, provider: account.provider },
      });
    }
    return account.organizationId;
  }

  /**
   * A request with an idempotency key: stored by the one request that claims the key (on any replica), answered
   * again to later ones with the same request, refused to a different request (422) or while the claim holds (409).
   */
  private async ingestOnce(request: IngestRequest, key: string, now: number): Promise<IngestResult> {
    const { organizationId, events } = request;
    const requestHash = hashRequest(request);
    const claimId = randomUUID();
    const claim = await claimIdempotencyKey(this.db, {
      organizationId,
      key,
      requestHash,
      receivedAt: now,
      claimId,
      leaseMs: IDEMPOTENCY_LEASE_MS,
      ttlMs: this.config.INGEST_IDEMPOTENCY_TTL_MS,
    });
    if (claim.kind === 'done') return { accepted: claim.accepted, replayed: true };
    if (claim.kind === 'reused') {
      throw appError('logs:ingest:idempotency-key-reused', {
        description: 'This Idempotency-Key was first sent with a different request; use a new key for a new request.',
      });
    }
    if (claim.kind === 'in-use') {
      throw appError('logs:ingest:idempotency-key-in-use', {
        description: 'Another request with this Idempotency-Key is storing its events; retry when it has finished.',
        headers: { 'retry-after': '1' },
      });
    }
    // Ids from the organization, key and request: a retry of a request that failed mid-way skips what was stored.
    const digest = createHash('sha256').update(`${organizationId}\u0000${key}\u0000${requestHash}`).digest('hex');
    const rows = rowsOf(request, claim.receivedAt, (timestamp, index) => idempotentEventId(timestamp, index, digest));
    let storedAny = false;
    try {
      await this.asHeavyWork(request, () =>
        this.store(organizationId, rows, () => {
          storedAny = true;
        }),
      );
      await completeIdempotencyKey(this.db, organizationId, key, claimId, events.length);
    } catch (error) {
      await releaseIdempotencyKey(this.db, organizationId, key, claimId, storedAny).catch(() => undefined);
      throw error;
    }
    return { accepted: events.length, replayed: false };
  }

  private asHeavyWork({ organizationId, principalId }: IngestRequest, work: () => Promise<void>): Promise<void> {
    const heavy = this.options.heavy;
    return heavy === undefined ? work() : heavy.run({ organizationId, principalId }, {}, work);
  }

  /**
   * Writes the events in chunks of about one `DB_SLICE_MS` each, each chunk its own transaction with the
   * organization's quota applied in it: one request at the size limit never holds the database for long, and
   * other tenants' statements run between its chunks.
   */
  private async store(organizationId: string, rows: LocalEventInput[], onChunkStored?: () => void): Promise<void> {
    const quota = { maxEvents: this.config.INGEST_MAX_EVENTS_PER_ORG, deleteLimit: this.deleteLimit };
    for (let start = 0; start < rows.length; ) {
      const end = this.sizer.chunkEnd(rows, start);
      const started = performance.now();
      const result = await insertEventsWithinQuota(this.db, organizationId, rows.slice(start, end), quota);
      this.sizer.record(rows, start, end, performance.now() - started);
      onChunkStored?.();
      this.deletedSinceVacuum += result.deleted;
      if (result.excess > 0) await this.trim(organizationId);
      start = end;
    }
  }

  /** Deletes the organization's oldest events, a bounded chunk per transaction, until it is within its quota. */
  private async trim(organizationId: string): Promise<number> {
    const quota = { maxEvents: this.config.INGEST_MAX_EVENTS_PER_ORG, deleteLimit: this.deleteLimit };
    let deleted = 0;
    for (;;) {
      const result = await trimOrganizationEvents(this.db, organizationId, quota);
      deleted += result.deleted;
      this.deletedSinceVacuum += result.deleted;
      if (result.excess <= 0 || this.closed) return deleted;
    }
  }

  /**
   * Starts the periodic sweep (servers; not the CLI): count changes folded into totals, events past the retention
   * window, organizations past their quota, expired idempotency keys. Timer unref'd: it never keeps the process alive. Stopped by `close`.
   */
  startSweeping(log?: Logger): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => {
      this.sweep().catch((error: unknown) => log?.warn({ err: error }, 'ingest sweep failed; retried next time'));
    }, sweepIntervalMs(this.config));
    this.timer.unref();
  }

  /** One sweep now (a sweep already running is joined). Safe on several replicas at once. */
  sweep(): Promise<SweepResult> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<SweepResult> {
    const result: SweepResult = { folded: 0, expired: 0, trimmed: 0, keys: 0, vacuumed: false };
    const limit = this.deleteLimit;
    if (this.config.INGEST_RETENTION_MS > 0) {
      for (let more = true; more && !this.closed; ) {
        const chunk = await deleteExpiredEvents(this.db, this.config.INGEST_RETENTION_MS, limit);
        result.expired += chunk.deleted;
        more = chunk.more;
      }
      this.deletedSinceVacuum += result.expired;
    }
    for (const { organizationId } of await organizationsOverQuota(this.db, this.config.INGEST_MAX_EVENTS_PER_ORG)) {
      if (this.closed) break;
      result.trimmed += await this.trim(organizationId);
    }
    for (let n = limit; n === limit && !this.closed; ) {
      n = await deleteExpiredIdempotencyKeys(this.db, limit);
      result.keys += n;
    }
    // Last, so the deletions above are folded in too.
    for (let n = FOLD_LIMIT; n === FOLD_LIMIT && !this.closed; ) {
      n = await foldEventCountChanges(this.db, FOLD_LIMIT);
      result.folded += n;
    }
    if (this.options.embedded === true && !this.closed && this.deletedSinceVacuum >= VACUUM_AFTER_DELETED) {
      const stored = await countStoredEvents(this.db);
      if (this.deletedSinceVacuum >= stored / 10) {
        await vacuumLogEvents(this.db);
        this.deletedSinceVacuum = 0;
        result.vacuumed = true;
      }
    }
    return result;
  }

  /** Stops the sweep and waits for a running one to end (before the database closes). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping?.catch(() => undefined);
  }
}

/** Often enough for the shortest window (a tenth of it), at most once a minute, at least once a second. */
export function sweepIntervalMs(config: IngestConfig): number {
  const windows = [config.INGEST_IDEMPOTENCY_TTL_MS];
  if (config.INGEST_RETENTION_MS > 0) windows.push(config.INGEST_RETENTION_MS);
  return Math.min(60_000, Math.max(1_000, Math.min(...windows) / 10));
}

/** An authorized ingest request. */
interface IngestRequest {
  organizationId: string;
  principalId: string | undefined;
  target: IngestTarget;
  events: IngestEvent[];
  /** Each event's own time in epoch ms, if it has one. */
  given: (number | undefined)[];
}

/** The rows to store: an event without a time gets `receivedAt`, as its ingestion time is. */
function rowsOf(
  { target, events, given }: IngestRequest,
  receivedAt: number,
  eventId: (timestamp: number, index: number) => string,
): LocalEventInput[] {
  return events.map((e, i) => {
    const timestamp = given[i] ?? receivedAt;
    return {
      cloudAccountId: target.accountId,
      region: target.region,
      logGroup: target.logGroup,
      logStream: target.logStream,
      timestamp,
      message: e.message,
      ingestionTime: receivedAt,
      eventId: eventId(timestamp, i),
    };
  });
}

/**
 * SHA-256 of the request in a canonical form: the target and each event's message and time (as epoch ms, so
 * `1700000000000` and `2023-11-14T22:13:20.000Z` are the same event; no time stays "no time").
 */
function hashRequest({ target, events, given }: IngestRequest): string {
  const canonical = JSON.stringify([
    target.accountId,
    target.region,
    target.logGroup,
    target.logStream,
    events.map((e, i) => [e.message, given[i] ?? null]),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** Rows per chunk at most, and at least (however slow the database seemed). */
const MAX_CHUNK_ROWS = 5_000;
const MIN_CHUNK_ROWS = 50;

/**
 * Sizes ingest chunks so each transaction holds the database for about `targetMs`: it learns how much work the
 * database does per millisecond from the chunks before (a row costs by its count and its message's length).
 */
class ChunkSizer {
  /** Work units per millisecond, learned; the first guess is conservative (about 500 short rows per 50 ms). */
  private rate = 10;

  constructor(private readonly targetMs: number) {}

  chunkEnd(rows: LocalEventInput[], start: number): number {
    const budget = this.rate * this.targetMs;
    let units = 0;
    let end = start;
    while (end < rows.length && end - start < MAX_CHUNK_ROWS && (end - start < MIN_CHUNK_ROWS || units < budget)) {
      units += cost(rows[end]!);
      end++;
    }
    return end;
  }

  record(rows: LocalEventInput[], start: number, end: number, elapsedMs: number): void {
    let units = 0;
    for (let i = start; i < end; i++) units += cost(rows[i]!);
    const observed = units / Math.max(1, elapsedMs);
    // Smoothed, so one chunk that waited behind another tenant's statement does not halve the next.
    this.rate = Math.min(1_000, Math.max(0.5, this.rate * 0.7 + observed * 0.3));
  }
}

/** A row's work: one unit, plus one per 512 characters of message (indexing, TOAST, the JSON parse). */
function cost(row: LocalEventInput): number {
  return 1 + row.message.length / 512;
}
