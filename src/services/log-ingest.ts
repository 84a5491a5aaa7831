import { canRead, canWrite, type Caller } from '../core/caller.js';
import { appError } from '../core/errors.js';
import { insertLocalEvents, newEventId } from '../store/repositories/log-events.js';
import { epochMsOf, invalidTime } from '../core/log-time.js';
import type { Db } from '../store/db.js';
import { findCloudAccount } from '../store/repositories/cloud-accounts.js';

import { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST } from '../core/schemas/log-ingest.js';

export { type IngestEvent, type IngestTarget, MAX_EVENTS_PER_INGEST };

/** Writes events into a `local` cloud account: the embedded default's way in for logs. */
export class LogIngestService {
  constructor(private readonly db: Db) {}

  async ingest(caller: Caller | null, target: IngestTarget, events: IngestEvent[]): Promise<number> {
    const now = Date.now();
    // Checked before anything is read, like the route's schema: the schema bounds integers, but an ISO
    // string's offset can still carry it past the range (and the CLI calls this without the route).
    const timestamps = events.map((e, i) => {
      if (e.timestamp === undefined) return now;
      const ms = epochMsOf(e.timestamp);
      if (Number.isNaN(ms)) throw invalidTime(`body.events[${i}].timestamp`);
      return ms;
    });
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
    if (events.length > MAX_EVENTS_PER_INGEST) {
      throw appError('logs:ingest:too-large', { description: `At most ${MAX_EVENTS_PER_INGEST} events per request.` });
    }
    const rows = events.map((e, i) => ({
      cloudAccountId: target.accountId,
      region: target.region,
      logGroup: target.logGroup,
      logStream: target.logStream,
      timestamp: timestamps[i]!,
      message: e.message,
      ingestionTime: now,
      eventId: newEventId(timestamps[i]!),
    }));
    await insertLocalEvents(this.db, rows, now);
    return rows.length;
  }
}
