import { canRead, canWrite, type Caller } from '../auth/caller.js';
import { appError } from '../errors.js';
import { insertLocalEvents, newEventId } from '../logs/local-events.js';
import type { Db } from '../store/db.js';

export const MAX_EVENTS_PER_INGEST = 10_000;

export interface IngestTarget {
  accountId: string;
  region: string;
  logGroup: string;
  logStream: string;
}

export interface IngestEvent {
  message: string;
  /** Epoch ms or ISO 8601; default now. */
  timestamp?: number | string;
}

/** Writes events into a `local` cloud account: the embedded default's way in for logs. */
export class LogIngestService {
  constructor(private readonly db: Db) {}

  async ingest(caller: Caller | null, target: IngestTarget, events: IngestEvent[]): Promise<number> {
    const account = await this.db
      .selectFrom('cloud_accounts')
      .select(['organization_id', 'provider'])
      .where('id', '=', target.accountId)
      .executeTakeFirst();
    // Another organization's account answers like a missing one.
    if (account === undefined || (caller !== null && !canRead(caller, account.organization_id))) {
      throw appError('logs:account:not-found');
    }
    if (caller !== null && !canWrite(caller, account.organization_id)) throw appError('auth:permission:denied');
    if (account.provider !== 'local') {
      throw appError('logs:account:not-local', { metadata: { accountId: target.accountId, provider: account.provider } });
    }
    if (events.length > MAX_EVENTS_PER_INGEST) {
      throw appError('logs:ingest:too-large', { description: `At most ${MAX_EVENTS_PER_INGEST} events per request.` });
    }
    const now = Date.now();
    const rows = events.map((e, i) => {
      const timestamp = e.timestamp === undefined ? now : typeof e.timestamp === 'number' ? e.timestamp : Date.parse(e.timestamp);
      if (!Number.isFinite(timestamp)) {
        throw appError('validation:request:invalid-body', { description: `events[${i}].timestamp is not a valid time` });
      }
      return {
        cloudAccountId: target.accountId,
        region: target.region,
        logGroup: target.logGroup,
        logStream: target.logStream,
        timestamp,
        message: e.message,
        ingestionTime: now,
        eventId: newEventId(timestamp),
      };
    });
    await insertLocalEvents(this.db, rows, now);
    return rows.length;
  }
}
