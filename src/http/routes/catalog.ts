import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema } from '../../core/schemas/common.js';
import { CallerProfileSchema } from '../../core/schemas/identity.js';
import { LogCatalogSchema } from '../../core/schemas/log-catalog.js';
import type { IdentityService } from '../../services/identity.js';
import type { LogCatalogService } from '../../services/log-catalog.js';

/** What a client (the log explorer) needs to know before it queries: who it is, and what it can look at. */
export const catalogRoutes: FastifyPluginAsyncTypebox<{
  identity: IdentityService;
  catalog: LogCatalogService;
}> = async (app, { identity, catalog }) => {
  app.get(
    '/me',
    {
      schema: {
        operationId: 'getCaller',
        tags: ['identity'],
        summary:
          'Who the bearer token is: its principal, the key, and the organizations it may act in with their roles',
        response: { 200: DataOf(CallerProfileSchema), ...errorResponses() },
      },
    },
    async (request) => ({ data: await identity.profile(callerOf(request)) }),
  );

  app.get(
    '/organizations/:id/log-catalog',
    {
      schema: {
        operationId: 'getLogCatalog',
        tags: ['logs'],
        summary:
          "The organization's projects, environments and module instances with their log sources and deployment " +
          'resources (what the log query can select), by name then id; any member may read it',
        params: Type.Object({ id: IdSchema }),
        response: { 200: DataOf(LogCatalogSchema), ...errorResponses(404) },
      },
    },
    async (request) => ({ data: await catalog.catalog(callerOf(request), request.params.id) }),
  );
};
