import { Type, type Static } from '@sinclair/typebox';
import { IdentityProviderSchema, RoleSchema } from '../enums.js';

/** Who a bearer token is and what it may use: never the token, never its hash. */
export const CallerProfileSchema = Type.Object(
  {
    principal: Type.Object(
      {
        id: Type.String(),
        name: Type.String(),
        superadmin: Type.Boolean({
          description: 'Whether this credential acts as a superadmin (a session never does)',
        }),
        email: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
    session: Type.Optional(
      Type.Object(
        {
          provider: IdentityProviderSchema,
          expiresAt: Type.String({ format: 'date-time', description: 'When the session ends at the latest' }),
        },
        { additionalProperties: false, description: 'Set for a signed-in person: how they signed in' },
      ),
    ),
    key: Type.Optional(
      Type.Object(
        {
          id: Type.String({ description: 'The key id: the middle part of its token `berth_<id>_<secret>`' }),
          name: Type.Optional(Type.String()),
          organizationId: Type.Optional(
            Type.String({ description: 'Set when the key acts in this one organization only' }),
          ),
          expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
        },
        { additionalProperties: false, description: 'Set for a bearer token: its API key' },
      ),
    ),
    organizations: Type.Array(
      Type.Object({ id: Type.String(), name: Type.String(), role: RoleSchema }, { additionalProperties: false }),
      {
        description:
          'For a session, the organizations whose permitted identity providers include its provider. ' +
          "For a key, the organizations it may act in, by name then id: the principal's memberships (only the key's " +
          'organization when the key is scoped), each with the membership role. A superadmin acts as an owner ' +
          'everywhere its key reaches but lists only its memberships, plus the organization its key is scoped to ' +
          '(role `owner` when it is no member there); an unscoped superadmin key may name any organization.',
      },
    ),
  },
  { title: 'CallerProfile', additionalProperties: false },
);
export type CallerProfile = Static<typeof CallerProfileSchema>;
