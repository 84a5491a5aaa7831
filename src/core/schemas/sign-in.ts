import { Type, type Static } from '@sinclair/typebox';
import { EXTERNAL_PROVIDERS, IdentityProviderSchema, literalUnion } from '../enums.js';
import { IdSchema } from './common.js';

const DateTime = Type.String({ format: 'date-time' });

/** The five providers an OpenID Connect issuer stands for, as written in `/auth/sign-in/{provider}`. */
export const ExternalProviderSchema = literalUnion(EXTERNAL_PROVIDERS, {
  description: 'The identity provider, as written (`SOCIAL_1`)',
});
export const ProviderParams = Type.Object({ provider: ExternalProviderSchema });

export const SignInMethodSchema = Type.Object(
  {
    provider: IdentityProviderSchema,
    displayName: Type.String(),
    kind: literalUnion(['oidc', 'password'] as const, {
      description: '`oidc`: send the browser to `signInUrl`; `password`: `POST /auth/password`',
    }),
    signInUrl: Type.String(),
  },
  { title: 'SignInMethod', additionalProperties: false },
);
export type SignInMethodView = Static<typeof SignInMethodSchema>;

/** Whether the request's cookie is a live session (the page asks before it calls anything that would 401). */
export const SessionStateSchema = Type.Union(
  [
    Type.Null({ description: 'No session: no cookie, or one that ended' }),
    Type.Object(
      { provider: IdentityProviderSchema, expiresAt: DateTime },
      { additionalProperties: false, description: 'The session the cookie carries' },
    ),
  ],
  { title: 'SessionState' },
);

export const SignInMethodsQuery = Type.Object(
  {
    organizationId: Type.Optional(
      Type.String({
        ...IdSchema,
        description: 'Only the ways this organization permits (none for an organization that does not exist)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SignInStartQuery = Type.Object(
  {
    organizationId: Type.Optional(IdSchema),
    returnTo: Type.Optional(
      Type.String({ maxLength: 2048, description: 'A path on this site to land on afterwards (default `/ui/logs`)' }),
    ),
  },
  { additionalProperties: false },
);

/** The issuer's answer: the library reads every parameter it sends (code, state, iss, error…). */
export const CallbackQuery = Type.Object({}, { additionalProperties: Type.String({ maxLength: 4096 }) });

export const PasswordSignInBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 320 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

export const IdentitySchema = Type.Object(
  {
    id: Type.String(),
    provider: IdentityProviderSchema,
    issuer: Type.String(),
    subject: Type.String(),
    email: Type.Optional(Type.String()),
    createdAt: DateTime,
  },
  { title: 'Identity', additionalProperties: false },
);
export type Identity = Static<typeof IdentitySchema>;

export const IdentityParams = Type.Object({ identityId: IdSchema });
export const MemberParams = Type.Object({ organizationId: IdSchema, principalId: IdSchema });
export const MemberIdentityParams = Type.Object({
  organizationId: IdSchema,
  principalId: IdSchema,
  identityId: IdSchema,
});
