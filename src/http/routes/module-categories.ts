import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema } from '../../core/schemas/common.js';
import { CreateModuleCategoryBody, ModuleCategorySchema } from '../../core/schemas/module-categories.js';
import type { ModuleCategoryService } from '../../services/module-categories.js';

export const moduleCategoryRoutes: FastifyPluginAsyncTypebox<{ categories: ModuleCategoryService }> = async (
  app,
  { categories },
) => {
  app.post(
    '/module-categories',
    {
      schema: {
        operationId: 'createModuleCategory',
        tags: ['module-categories'],
        summary: "Create a module category in the caller's organization",
        body: CreateModuleCategoryBody,
        response: { 201: DataOf(ModuleCategorySchema), ...errorResponses(403, 409, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const category = await categories.create(callerOf(request), request.body.data);
      return reply
        .code(201)
        .header('location', `/module-categories/${encodeURIComponent(category.id)}`)
        .send({ data: category });
    },
  );

  app.get(
    '/module-categories',
    {
      schema: {
        operationId: 'listModuleCategories',
        tags: ['module-categories'],
        summary: "The caller's organizations' categories and the global ones, by sortOrder then name",
        response: { 200: DataOf(Type.Array(ModuleCategorySchema)), ...errorResponses() },
      },
    },
    async (request) => ({ data: await categories.list(callerOf(request)) }),
  );

  app.get(
    '/module-categories/:id',
    {
      schema: {
        operationId: 'getModuleCategory',
        tags: ['module-categories'],
        params: Type.Object({ id: IdSchema }),
        response: { 200: DataOf(ModuleCategorySchema), ...errorResponses(404) },
      },
    },
    async (request) => ({ data: await categories.get(callerOf(request), request.params.id) }),
  );
};
