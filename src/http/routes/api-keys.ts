import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import {
  ApiKeyPageSchema,
  ApiKeyParams,
  CreateApiKeyBody,
  CreatedApiKeySchema,
  ListApiKeysQuery,
  OrganizationParams,
} from '../../core/schemas/api-keys.js';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import type { ApiKeyService } from '../../services/api-keys.js';

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ apiKeys: ApiKeyService }> = async (app, { apiKeys }) => {
  app.post(
    '/organizations/:organizationId/api-keys',
    {
      schema: {
        operationId: 'createApiKey',
        tags: ['api-keys'],
        summary:
          'Create a key scoped to the organization (admin or owner); the answer is the only time its token is shown',
        params: OrganizationParams,
        body: CreateApiKeyBody,
        response: { 201: DataOf(CreatedApiKeySchema), ...errorResponses(403, 404, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const { organizationId } = request.params;
      const created = await apiKeys.create(callerOf(request), organizationId, request.body.data, request.log);
      return reply.code(201).send({ data: created });
    },
  );

  app.get(
    '/organizations/:organizationId/api-keys',
    {
      schema: {
        operationId: 'listApiKeys',
        tags: ['api-keys'],
        summary: "The organization's keys, newest first, without their tokens (admin or owner); cursor-paged",
        params: OrganizationParams,
        querystring: ListApiKeysQuery,
        response: { 200: ApiKeyPageSchema, ...errorResponses(403) },
      },
    },
    async (request) => apiKeys.list(callerOf(request), request.params.organizationId, request.query),
  );

  app.delete(
    '/organizations/:organizationId/api-keys/:keyId',
    {
      schema: {
        operationId: 'revokeApiKey',
        tags: ['api-keys'],
        summary: "Revoke one of the organization's keys (admin or owner); revoking a revoked key answers 204 again",
        params: ApiKeyParams,
        response: { 204: Type.Null({ description: 'Revoked' }), ...errorResponses(403, 404) },
      },
    },
    async (request, reply) => {
      const { organizationId, keyId } = request.params;
      await apiKeys.revoke(callerOf(request), organizationId, keyId, request.log);
      return reply.code(204).send(null);
    },
  );
};
