import type { Config } from '../../config.js';
import type { IngestEvent, IngestTarget } from '../../core/schemas/log-ingest.js';
import type { LocalEventInput } from '../../store/log-ingest/events.js';

/** The settings ingest reads (README "Limits"). */
export type IngestConfig = Pick<
  Config,
  'INGEST_MAX_EVENTS_PER_ORG' | 'INGEST_RETENTION_MS' | 'INGEST_IDEMPOTENCY_TTL_MS' | 'DB_SLICE_MS'
>;

export interface IngestResult {
  accepted: number;
  /** The answer of an earlier request with the same idempotency key: nothing was stored this time. */
  replayed: boolean;
}

/** An authorized ingest request. */
export interface IngestRequest {
  organizationId: string;
  principalId: string | undefined;
  target: IngestTarget;
  events: IngestEvent[];
  /** Each event's own time in epoch ms, if it has one. */
  given: (number | undefined)[];
}

/** The rows to store: an event without a time gets `receivedAt`, as its ingestion time is. */
export function rowsOf(
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
