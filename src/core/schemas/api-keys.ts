import { Type, type Static } from '@sinclair/typebox';
import { IdSchema, PageLimit, PageOf, PRINTABLE_NAME_PATTERN, Text } from './common.js';

const DateTime = Type.String({ format: 'date-time' });

/** The longest lifetime a key may be given through the API. */
export const MAX_KEY_LIFETIME_DAYS = 3650;

const apiKeyProperties = {
  id: Type.String({ description: 'The key id: the middle part of its token `berth_<id>_<secret>`' }),
  principalId: Type.String({ description: 'The principal the key acts as' }),
  organizationId: Type.String({ description: 'The only organization the key acts in' }),
  name: Type.Optional(Type.String()),
  createdAt: DateTime,
  createdBy: Type.Optional(Type.String({ description: 'The principal that created the key through the API' })),
  expiresAt: Type.Optional(DateTime),
  revokedAt: Type.Optional(DateTime),
  revokedBy: Type.Optional(Type.String({ description: 'The principal that revoked the key through the API' })),
};

/** A key as the API shows it: never its token, never its hash. */
export const ApiKeySchema = Type.Object(apiKeyProperties, { title: 'ApiKey', additionalProperties: false });
export type ApiKey = Static<typeof ApiKeySchema>;

export const CreatedApiKeySchema = Type.Object(
  {
    ...apiKeyProperties,
    token: Type.String({ description: 'The bearer token. Shown in this answer only: Berth keeps just its SHA-256' }),
  },
  { title: 'CreatedApiKey', additionalProperties: false },
);
/** The answer to a create: the only time the token is ever shown. */
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

export const NewApiKeySchema = Type.Object(
  {
    principalId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: PRINTABLE_NAME_PATTERN,
        description: "A member of the organization with a role no higher than the caller's (default: the caller)",
      }),
    ),
    name: Type.Optional(Text({ minLength: 1, maxLength: 100, description: 'A label for people' })),
    expiresInDays: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_KEY_LIFETIME_DAYS, description: 'Not with expiresAt' }),
    ),
    expiresAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description: `In the future, at most ${MAX_KEY_LIFETIME_DAYS} days away; not with expiresInDays`,
      }),
    ),
  },
  { additionalProperties: false, description: 'Without expiresInDays or expiresAt the key does not expire' },
);
export type NewApiKey = Static<typeof NewApiKeySchema>;

export const CreateApiKeyBody = Type.Object({ data: NewApiKeySchema }, { additionalProperties: false });
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

export const ApiKeyPageSchema = PageOf(ApiKeySchema);
export type ApiKeyPage = Static<typeof ApiKeyPageSchema>;

export const ListApiKeysQuery = Type.Object(
  {
    limit: PageLimit(),
    cursor: Type.Optional(Text({ minLength: 1, maxLength: 2048, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type ListApiKeysQuery = Static<typeof ListApiKeysQuery>;

export const OrganizationParams = Type.Object({ organizationId: IdSchema });
export const ApiKeyParams = Type.Object({ organizationId: IdSchema, keyId: IdSchema });
