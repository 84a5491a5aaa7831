import type { Logger } from '../../core/logger.js';
import type { Db } from '../../store/db.js';
import {
  countStoredEvents,
  deleteExpiredEvents,
  foldEventCountChanges,
  organizationsOverQuota,
  trimOrganizationEvents,
  vacuumLogEvents,
} from '../../store/log-ingest/events.js';
import { deleteExpiredIdempotencyKeys } from '../../store/log-ingest/idempotency.js';
import { deleteLimit } from './chunks.js';
import type { IngestConfig } from './request.js';

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

/** Count changes (one per statement that wrote or deleted an account's events) folded per statement. */
const FOLD_LIMIT = 10_000;
/** PGlite: vacuum once this many events (or a tenth of those stored, if more) were deleted since the last time. */
const VACUUM_AFTER_DELETED = 10_000;

/** Often enough for the shortest window (a tenth of it), at most once a minute, at least once a second. */
export function sweepIntervalMs(config: IngestConfig): number {
  const windows = [config.INGEST_IDEMPOTENCY_TTL_MS];
  if (config.INGEST_RETENTION_MS > 0) windows.push(config.INGEST_RETENTION_MS);
  return Math.min(60_000, Math.max(1_000, Math.min(...windows) / 10));
}

/**
 * What keeps ingested events within their limits: the periodic sweep (count changes folded into totals, events
 * past the retention window, organizations past their quota, expired idempotency keys), the quota trim an ingest
 * asks for, and on PGlite the vacuum their deletions call for.
 */
export class RetentionSweep {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<SweepResult> | undefined;
  private closed = false;
  private deletedSinceVacuum = 0;

  /** `embedded`: PGlite, which runs no autovacuum, so the sweep vacuums after large deletions. */
  constructor(
    private readonly db: Db,
    private readonly config: IngestConfig,
    private readonly embedded: boolean,
  ) {}

  /** Counts events deleted elsewhere (an ingest's own quota) towards the next vacuum. */
  deleted(count: number): void {
    this.deletedSinceVacuum += count;
  }

  /** Deletes the organization's oldest events, a bounded chunk per transaction, until it is within its quota. */
  async trim(organizationId: string): Promise<number> {
    const quota = {
      maxEvents: this.config.INGEST_MAX_EVENTS_PER_ORG,
      deleteLimit: deleteLimit(this.config.DB_SLICE_MS),
    };
    let deleted = 0;
    for (;;) {
      const result = await trimOrganizationEvents(this.db, organizationId, quota);
      deleted += result.deleted;
      this.deletedSinceVacuum += result.deleted;
      if (result.excess <= 0 || this.closed) return deleted;
    }
  }

  /** Starts the periodic sweep; the timer is unref'd (it never keeps the process alive). Stopped by `close`. */
  start(log?: Logger): void {
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
    const limit = deleteLimit(this.config.DB_SLICE_MS);
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
    if (this.embedded && !this.closed && this.deletedSinceVacuum >= VACUUM_AFTER_DELETED) {
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
