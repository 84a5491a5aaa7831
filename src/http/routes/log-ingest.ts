import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import { IngestBody, IngestResultSchema } from '../../core/schemas/log-ingest.js';
import type { LogIngestService } from '../../services/log-ingest.js';

export const logIngestRoutes: FastifyPluginAsyncTypebox<{ ingest: LogIngestService }> = async (app, { ingest }) => {
  app.post(
    '/cloud/logs/local/events',
    {
      schema: {
        operationId: 'ingestLocalLogEvents',
        tags: ['logs'],
        summary: 'Write log events into a local cloud account (admin or owner)',
        body: IngestBody,
        response: {
          202: DataOf(IngestResultSchema),
          ...errorResponses(403, 404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const { events, ...target } = request.body;
      const accepted = await ingest.ingest(callerOf(request), target, events);
      return reply.code(202).send({ data: { accepted } });
    },
  );
};
