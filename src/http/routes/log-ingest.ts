import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { DataOf, errorResponses, IdSchema, PRINTABLE_NAME_PATTERN } from '../schemas/common.js';
import { MAX_TIME_MS } from '../../core/log-time.js';
import { MAX_EVENTS_PER_INGEST, type LogIngestService } from '../../services/log-ingest.js';

const Name = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: PRINTABLE_NAME_PATTERN });

/** An event's time; an ISO string past 9999-12-31T23:59:59.999Z (by its offset) is refused by the service. */
export const IngestTimestampSchema = Type.Union(
  [Type.Integer({ minimum: 0, maximum: MAX_TIME_MS }), Type.String({ format: 'date-time' })],
  {
    description:
      'Epoch milliseconds or an RFC 3339 date-time, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z; default now',
  },
);

export const IngestBody = Type.Object(
  {
    accountId: IdSchema,
    region: Name(64),
    logGroup: Name(512),
    logStream: Name(512),
    events: Type.Array(
      Type.Object(
        {
          // Any text: a NUL is stored as U+FFFD (docs/decisions.md), not refused.
          message: Type.String({ maxLength: 262_144 }),
          timestamp: Type.Optional(IngestTimestampSchema),
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
