import { Type, type Static } from '@sinclair/typebox';
import { Text } from './common.js';

export const GIVEN_ID_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$';

export const NewModuleCategorySchema = Type.Object(
  {
    givenId: Type.String({
      pattern: GIVEN_ID_PATTERN,
      description: 'A slug, unique in the organization',
      'x-format': 'a slug of 1-64 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
    }),
    name: Text({ minLength: 1, maxLength: 100 }),
    sortOrder: Type.Integer({ minimum: -2147483648, maximum: 2147483647 }),
    description: Type.Optional(Text({ maxLength: 2000 })),
    icon: Type.Optional(Text({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
export type NewModuleCategory = Static<typeof NewModuleCategorySchema>;

export const CreateModuleCategoryBody = Type.Object({ data: NewModuleCategorySchema }, { additionalProperties: false });
export type CreateModuleCategoryBody = Static<typeof CreateModuleCategoryBody>;

export const ModuleCategorySchema = Type.Object(
  {
    id: Type.String(),
    givenId: Type.String(),
    name: Type.String(),
    sortOrder: Type.Integer(),
    description: Type.Optional(Type.String()),
    icon: Type.Optional(Type.String()),
    organizationId: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'ModuleCategory', additionalProperties: false },
);
export type ModuleCategory = Static<typeof ModuleCategorySchema>;
