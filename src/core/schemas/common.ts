import { Type, type Static, type StringOptions, type TSchema } from '@sinclair/typebox';

/** An object of any properties (typed as a record, documented as an open object). */
const OpenObject = () => Type.Unsafe<Record<string, unknown>>(Type.Object({}, { additionalProperties: true }));

/** Berth's error object (docs/design.md#errors): no other properties are allowed. */
export const ErrorSchema = Type.Object(
  {
    code: Type.String({ description: 'namespace:entity:reason' }),
    message: Type.String(),
    description: Type.Optional(Type.String()),
    action: Type.Optional(Type.Object({ label: Type.String(), url: Type.String() }, { additionalProperties: false })),
    details: Type.Optional(
      Type.Array(
        Type.Object(
          {
            title: Type.String(),
            render: Type.Union([Type.Literal('list'), Type.Literal('object')]),
            items: Type.Optional(Type.Array(Type.String())),
            object: Type.Optional(OpenObject()),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    isInternal: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(OpenObject()),
    requestId: Type.Optional(Type.String()),
  },
  { $id: 'Error', additionalProperties: false, title: 'Error' },
);
export type ErrorBody = Static<typeof ErrorSchema>;
export type ErrorAction = NonNullable<ErrorBody['action']>;
export type ErrorDetail = NonNullable<ErrorBody['details']>[number];

const ErrorRef = Type.Ref('Error');

/** Error responses for a route: the shared error object under each status. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of new Set([400, 401, 500, ...statuses])) out[s] = ErrorRef;
  return out;
}

/**
 * Text PostgreSQL can store: no U+0000 (text cannot hold it) and no lone surrogate (UTF-8 cannot encode
 * one, so the drivers would silently store U+FFFD instead). Ajv compiles patterns with the `u` flag: a
 * surrogate pair is one code point, so emoji and other astral characters pass.
 */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$';

/** A printable name (ids, log groups and streams): no control character, no lone surrogate. */
export const PRINTABLE_NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]+$';

/** A request string that can reach the database: a schema failure (400 naming the field) instead of a 500. */
export const Text = (options: Omit<StringOptions, 'pattern'> = {}) =>
  Type.String({ ...options, pattern: STORABLE_TEXT_PATTERN });

/** A printable name of 1 to `maxLength` characters (log groups, streams, regions). */
export const PrintableName = (maxLength: number) =>
  Type.String({ minLength: 1, maxLength, pattern: PRINTABLE_NAME_PATTERN });

/** An id in a path or query: 1–128 printable characters. */
export const IdSchema = Type.String({ minLength: 1, maxLength: 128, pattern: PRINTABLE_NAME_PATTERN });

export const DataOf = <T extends TSchema>(schema: T) => Type.Object({ data: schema }, { additionalProperties: false });

/** Rows of a page when `limit` is not given. */
export const DEFAULT_PAGE_LIMIT = 25;

/** `limit` of a paged list: optional (the default fills it), 1–100. */
export const PageLimit = () =>
  Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_PAGE_LIMIT, description: 'Rows per page' }));

/** A page of a paged list: its rows, the limit it was cut at, the total, and the cursor of the next page. */
export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      data: Type.Array(item),
      meta: Type.Object(
        {
          limit: Type.Integer(),
          nextCursor: Type.Optional(Type.String({ description: 'Absent on the last page' })),
          totalCount: Type.Integer(),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  );
