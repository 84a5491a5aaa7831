import { Type, type Static } from '@sinclair/typebox';
import { MAX_TIME_MS } from '../log-time.js';
import { IdSchema, PrintableName } from './common.js';

/** Events one request (or one batch of `berth logs ingest`) may carry. */
export const MAX_EVENTS_PER_INGEST = 10_000;

/** An event's time; an ISO string past 9999-12-31T23:59:59.999Z (by its offset) is refused by the service. */
export const IngestTimestampSchema = Type.Union(
  [Type.Integer({ minimum: 0, maximum: MAX_TIME_MS }), Type.String({ format: 'date-time' })],
  {
    description:
      'Epoch milliseconds or an RFC 3339 date-time, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z; default now',
  },
);

export const IngestEventSchema = Type.Object(
  {
    // Any text: a NUL is stored as U+FFFD (docs/decisions.md), not refused.
    message: Type.String({ maxLength: 262_144 }),
    timestamp: Type.Optional(IngestTimestampSchema),
  },
  { additionalProperties: false },
);
export type IngestEvent = Static<typeof IngestEventSchema>;

export const IngestBody = Type.Object(
  {
    accountId: IdSchema,
    region: PrintableName(64),
    logGroup: PrintableName(512),
    logStream: PrintableName(512),
    events: Type.Array(IngestEventSchema, { maxItems: MAX_EVENTS_PER_INGEST }),
  },
  { additionalProperties: false },
);
export type IngestBody = Static<typeof IngestBody>;
/** The log stream events are written to. */
export type IngestTarget = Omit<IngestBody, 'events'>;

export const IngestResultSchema = Type.Object({ accepted: Type.Integer() }, { additionalProperties: false });

/** `Idempotency-Key`: 1–255 printable ASCII characters (space allowed inside, not at either end). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$';

export const IngestHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: IDEMPOTENCY_KEY_PATTERN,
      description:
        '1–255 printable ASCII characters. A retry with the same key and the same request (account, target and ' +
        'events) within INGEST_IDEMPOTENCY_TTL_MS (default 24 h) answers the first answer again and stores nothing; ' +
        'the same key with another request is 422, and while the first request with the key is still storing, 409. ' +
        'Keys are per organization (of the target account).',
    }),
  ),
});
