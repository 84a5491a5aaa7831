import { performance } from 'node:perf_hooks';
import { canRead, canWrite, type Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { insertEventsWithinQuota, type LocalEventInput, newEventId } from '../../store/log-ingest/events.js';
import { epochMsOf, invalidTime } from '../../core/log-time.js';
import type { Db } from '../../store/db.js';
import type { HeavyWork } from '../heavy-work.js';
import { findCloudAccount } from '../../store/repositories/cloud-accounts.js';
import { ChunkSizer, deleteLimit } from './chunks.js';
import { ingestOnce } from './idempotency.js';
import { type IngestConfig, type IngestRequest, type IngestResult, rowsOf } from './request.js';
import { RetentionSweep, type SweepResult, sweepIntervalMs } from './retention.js';

import { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST } from '../../core/schemas/log-ingest.js';
import { requestFlow } from '../../core/request-flow.js';

export { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST };
export { type IngestConfig, type IngestResult, type SweepResult, sweepIntervalMs };

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

/**
 * Writes events into a `local` cloud account: the embedded default's way in for logs. Each organization stores
 * at most `INGEST_MAX_EVENTS_PER_ORG` events (its oldest go first), events stored longer ago than
 * `INGEST_RETENTION_MS` are swept, and a request with an idempotency key is stored once however often it is sent.
 */
export class LogIngestService {
  private readonly sizer: ChunkSizer;
  private readonly retention: RetentionSweep;

  constructor(
    private readonly db: Db,
    private readonly config: IngestConfig,
    private readonly options: IngestServiceOptions = {},
  ) {
    this.sizer = new ChunkSizer(config.DB_SLICE_MS);
    this.retention = new RetentionSweep(db, config, options.embedded === true);
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
    if (options.idempotencyKey !== undefined) {
      return ingestOnce(
        this.db,
        this.config.INGEST_IDEMPOTENCY_TTL_MS,
        request,
        options.idempotencyKey,
        now,
        (rows, onChunkStored) => this.asHeavyWork(request, () => this.store(organizationId, rows, onChunkStored)),
      );
    }
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

  /** In the principal's share, in the line of ingests into the same log stream (their events differ). */
  private asHeavyWork(
    { organizationId, principalId, target }: IngestRequest,
    work: () => Promise<void>,
  ): Promise<void> {
    const heavy = this.options.heavy;
    if (heavy === undefined) return work();
    return heavy.run({ organizationId, principalId, flow: requestFlow('log-ingest', target) }, {}, work);
  }

  /**
   * Writes the events in chunks of about one `DB_SLICE_MS` each, each chunk its own transaction with the
   * organization's quota applied in it: one request at the size limit never holds the database for long, and
   * other tenants' statements run between its chunks.
   */
  private async store(organizationId: string, rows: LocalEventInput[], onChunkStored?: () => void): Promise<void> {
    const quota = {
      maxEvents: this.config.INGEST_MAX_EVENTS_PER_ORG,
      deleteLimit: deleteLimit(this.config.DB_SLICE_MS),
    };
    for (let start = 0; start < rows.length; ) {
      const end = this.sizer.chunkEnd(rows, start);
      const started = performance.now();
      const result = await insertEventsWithinQuota(this.db, organizationId, rows.slice(start, end), quota);
      this.sizer.record(rows, start, end, performance.now() - started);
      onChunkStored?.();
      this.retention.deleted(result.deleted);
      if (result.excess > 0) await this.retention.trim(organizationId);
      start = end;
    }
  }

  /**
   * Starts the periodic sweep (servers; not the CLI): count changes folded into totals, events past the retention
   * window, organizations past their quota, expired idempotency keys. Timer unref'd: it never keeps the process alive. Stopped by `close`.
   */
  startSweeping(log?: Logger): void {
    this.retention.start(log);
  }

  /** One sweep now (a sweep already running is joined). Safe on several replicas at once. */
  sweep(): Promise<SweepResult> {
    return this.retention.sweep();
  }

  /** Stops the sweep and waits for a running one to end (before the database closes). Idempotent. */
  close(): Promise<void> {
    return this.retention.close();
  }
}
