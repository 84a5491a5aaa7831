import { Type, type Static } from '@sinclair/typebox';
import { IdSchema, PrintableName } from './common.js';

/** Log groups per stream at most, counted after splitting (a group given twice counts once). */
export const MAX_LOG_GROUPS = 50;
/** Stream names per stream at most (FilterLogEvents' `logStreamNames` limit), counted after splitting. */
export const MAX_STREAM_NAMES = 100;

/**
 * Names as the ingest API takes them (PrintableName: no NUL, which PostgreSQL text cannot hold, nor any other
 * control character or lone surrogate), so a name no event can have is a 400 naming the parameter instead
 * of a failure inside the stream. The counts are checked after splitting comma-separated values.
 */
const List = (max: number, description: string) => Type.Array(PrintableName(max), { maxItems: 100, description });
/**
 * A prefix may be empty: a prefix every name has, so the whole of the named groups, streams created later
 * included. Otherwise printable like a name (PRINTABLE_NAME_PATTERN).
 */
const PREFIX_PATTERN = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]*$';

/** The query string of `GET /cloud/logs/stream`. */
export const LogStreamQuery = Type.Object(
  {
    accountId: IdSchema,
    logGroups: List(5000, `Log groups, repeated or comma-separated (at least one, at most ${MAX_LOG_GROUPS})`),
    logStreamPrefix: Type.Optional(
      Type.String({
        maxLength: 512,
        pattern: PREFIX_PATTERN,
        description:
          'Stream-name prefix. Exactly one of logStreamPrefix and logStreamNames is given. An empty prefix ' +
          '(`logStreamPrefix=`) means every stream of the named groups, streams created later included.',
      }),
    ),
    logStreamNames: Type.Optional(
      List(
        5000,
        `Exact stream names, repeated or comma-separated (at most ${MAX_STREAM_NAMES}). Exactly one of ` +
          'logStreamPrefix and logStreamNames is given.',
      ),
    ),
    region: Type.Optional(PrintableName(64)),
    startTime: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601 or epoch ms; default: the beginning' }),
    ),
    endTime: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601 or epoch ms; default: now; ignored with tail' }),
    ),
    tail: Type.Optional(Type.Boolean()),
    filterPattern: Type.Optional(
      Type.String({ maxLength: 1024, description: 'CloudWatch Logs filter pattern; empty disables' }),
    ),
  },
  { additionalProperties: false },
);
export type LogStreamQuery = Static<typeof LogStreamQuery>;
