import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import { IngestBody, IngestHeaders, IngestResultSchema } from '../../core/schemas/log-ingest.js';
import type { LogIngestService } from '../../services/log-ingest/service.js';

export const logIngestRoutes: FastifyPluginAsyncTypebox<{ ingest: LogIngestService }> = async (app, { ingest }) => {
  // The retention and quota sweep runs while the API does (not in the CLI), and stops before the database closes.
  ingest.startSweeping(app.log);
  app.addHook('onClose', async () => ingest.close());

  app.post(
    '/cloud/logs/local/events',
    {
      schema: {
        operationId: 'ingestLocalLogEvents',
        tags: ['logs'],
        summary: 'Write log events into a local cloud account (admin or owner)',
        description:
          'Each organization stores at most INGEST_MAX_EVENTS_PER_ORG local events: past it, its oldest events ' +
          '(by timestamp) are deleted to make room. Events are kept INGEST_RETENTION_MS after they were stored. ' +
          'With an Idempotency-Key, a retried request is stored once (a replayed answer carries ' +
          '`Idempotent-Replayed: true`).',
        headers: IngestHeaders,
        body: IngestBody,
        response: {
          202: DataOf(IngestResultSchema),
          ...errorResponses(403, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const { events, ...target } = request.body;
      const idempotencyKey = request.headers['idempotency-key'];
      const result = await ingest.ingest(callerOf(request), target, events, { idempotencyKey });
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(202).send({ data: { accepted: result.accepted } });
    },
  );
};
