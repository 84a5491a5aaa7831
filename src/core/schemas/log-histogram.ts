import { Type, type Static, type TInteger, type TOptional } from '@sinclair/typebox';
import { LOG_LEVELS, type LogLevel } from '../enums.js';
import { LogQueryBody } from './log-query.js';

/** Buckets of a histogram when the request gives no `buckets`. */
export const DEFAULT_BUCKETS = 60;
/** The most buckets a histogram may have (`buckets`). */
export const MAX_BUCKETS = 200;

/** The body of `POST /cloud/logs/logs-insights/histogram`: the log query's, and the number of buckets. */
export const LogHistogramBody = Type.Composite(
  [
    LogQueryBody,
    Type.Object({
      buckets: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_BUCKETS,
          default: DEFAULT_BUCKETS,
          description:
            'Equal buckets of W = ceil((end − start + 1) / buckets) ms from startTime; fewer when the window has fewer milliseconds',
        }),
      ),
    }),
  ],
  {
    additionalProperties: false,
    description: "The log query's body (limit and complete are accepted and ignored) and the number of buckets.",
  },
);
export type LogHistogramBody = Static<typeof LogHistogramBody>;

const LevelCounts = Type.Object(
  Object.fromEntries(LOG_LEVELS.map((level) => [level, Type.Optional(Type.Integer({ minimum: 1 }))])) as {
    [L in LogLevel]: TOptional<TInteger>;
  },
  { additionalProperties: false, description: 'Rows per level; only levels with rows' },
);

export const LogHistogramBucketSchema = Type.Object(
  {
    startMs: Type.Integer({ description: 'epoch milliseconds, inclusive' }),
    endMs: Type.Integer({ description: 'epoch milliseconds, inclusive' }),
    counts: LevelCounts,
  },
  { additionalProperties: false },
);
export type LogHistogramBucket = Static<typeof LogHistogramBucketSchema>;

export const LogHistogramResponse = Type.Object(
  {
    buckets: Type.Array(LogHistogramBucketSchema, {
      description: 'Every bucket of the window, oldest first, empty ones too',
    }),
    partial: Type.Boolean(),
    missedSources: Type.Array(Type.String()),
    unsupported: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);
export type LogHistogramResponse = Static<typeof LogHistogramResponse>;
