import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema } from '../../core/schemas/common.js';
import { IdentityProviderSchema } from '../../core/enums.js';
import type { OrganizationService } from '../../services/organizations.js';
import { NOT_IN_MEMORY } from '../../services/caches/cached-lookup.js';

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
    (request) => {
      // Answered from memory when it can be, without a promise: this is the route every client polls.
      const known = organizations.knownPermittedIdentityProviders(callerOf(request), request.params.id);
      if (known !== NOT_IN_MEMORY) return { data: known };
      return organizations.permittedIdentityProviders(callerOf(request), request.params.id).then((data) => ({ data }));
    },
  );
};
