import { Type, type Static } from '@sinclair/typebox';
import { LogLevelSchema } from '../enums.js';
import { FilterNodeSchema } from '../filter-tree/schema.js';
import { MAX_TIME_MS } from '../log-time.js';
import { IdSchema, Text } from './common.js';

/** Rows of a page when the request gives no `limit`. */
export const DEFAULT_LIMIT = 1000;
/** The most rows a page may have (`limit`), and the rows of a `complete` query. */
export const MAX_LIMIT = 10_000;

const Time = Type.Union([Text({ minLength: 1, maxLength: 40 }), Type.Integer({ minimum: 0, maximum: MAX_TIME_MS })], {
  description:
    'ISO 8601, or epoch milliseconds (number or digit string), from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z',
});

/** The body of `POST /cloud/logs/logs-insights` (docs/design.md#2-log-query). */
export const LogQueryBody = Type.Object(
  {
    startTime: Time,
    endTime: Time,
    environmentId: Type.Optional(IdSchema),
    moduleInstanceIds: Type.Optional(Type.Array(IdSchema, { maxItems: 500 })),
    logSourceKeys: Type.Optional(Type.Array(Text({ minLength: 1, maxLength: 300 }), { maxItems: 500 })),
    deploymentResourceId: Type.Optional(IdSchema),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT })),
    complete: Type.Optional(Type.Boolean()),
    // Only "an object with a kind" here: `parseFilter` checks the whole tree (FilterNodeSchema) and names each fault.
    filter: Type.Optional(
      Type.Object({ kind: Type.String() }, { additionalProperties: true, description: FilterNodeSchema.description }),
    ),
  },
  { additionalProperties: false },
);
export type LogQueryBody = Static<typeof LogQueryBody>;

export const LogRowSchema = Type.Object(
  {
    timestamp: Type.Integer({ description: 'epoch milliseconds' }),
    level: LogLevelSchema,
    message: Type.String(),
    logStream: Type.String(),
    sourceId: Type.String(),
    logSourceId: Type.String(),
    eventId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type LogQueryRow = Static<typeof LogRowSchema>;

export const LogQueryResponse = Type.Object(
  {
    rows: Type.Array(LogRowSchema),
    resultCount: Type.Integer(),
    nextEndTimeMs: Type.Integer(),
    partial: Type.Boolean(),
    missedSources: Type.Array(Type.String()),
    unsupported: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);
export type LogQueryResponse = Static<typeof LogQueryResponse>;
