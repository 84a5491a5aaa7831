import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../auth.js';
import { DataOf, errorResponses, IdSchema } from '../schemas/common.js';
import { MAX_EVENTS_PER_INGEST, type LogIngestService } from '../../services/log-ingest.js';

const Name = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: '^[^\\u0000-\\u001f\\u007f]+$' });

export const IngestBody = Type.Object(
  {
    accountId: IdSchema,
    region: Name(64),
    logGroup: Name(512),
    logStream: Name(512),
    events: Type.Array(
      Type.Object(
        {
          message: Type.String({ maxLength: 262_144 }),
          timestamp: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ format: 'date-time' })])),
        },
        { additionalProperties: false },
      ),
      { maxItems: MAX_EVENTS_PER_INGEST },
    ),
  },
  { additionalProperties: false },
);

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
          202: DataOf(Type.Object({ accepted: Type.Integer() }, { additionalProperties: false })),
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
