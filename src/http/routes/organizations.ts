import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema } from '../../core/schemas/common.js';
import { IdentityProviderSchema } from '../../core/enums.js';
import type { OrganizationService } from '../../services/organizations.js';

export const organizationRoutes: FastifyPluginAsyncTypebox<{ organizations: OrganizationService }> = async (
  app,
  { organizations },
) => {
  app.get(
    '/organizations/:id/permitted-identity-providers',
    {
      schema: {
        operationId: 'getPermittedIdentityProviders',
        tags: ['organizations'],
        summary: 'Sign-in methods the organization permits',
        params: Type.Object({ id: IdSchema }),
        response: { 200: DataOf(Type.Array(IdentityProviderSchema)), ...errorResponses(403, 422) },
      },
    },
    async (request) => ({
      data: await organizations.permittedIdentityProviders(callerOf(request), request.params.id),
    }),
  );
};
