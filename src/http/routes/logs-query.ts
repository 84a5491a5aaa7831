import { logQueryJson } from '../json-in-turns.js';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { untilClientGone } from '../plugins/client-gone.js';
import { errorResponses, IdSchema, Text } from '../../core/schemas/common.js';
import { LogLevelSchema } from '../../core/enums.js';
import { MAX_LIMIT, type LogQueryService } from '../../services/log-query/service.js';
import { MAX_TIME_MS } from '../../core/log-time.js';

const Time = Type.Union([Text({ minLength: 1, maxLength: 40 }), Type.Integer({ minimum: 0, maximum: MAX_TIME_MS })], {
  description:
    'ISO 8601, or epoch milliseconds (number or digit string), from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z',
});

export const LogQueryBody = Type.Object(
  {
    startTime: Time,
    endTime: Time,
    environmentId: Type.Optional(IdSchema),
    moduleInstanceIds: Type.Optional(Type.Array(IdSchema, { maxItems: 500 })),
    logSourceKeys: Type.Optional(Type.Array(Text({ minLength: 1, maxLength: 300 }), { maxItems: 500 })),
    deploymentResourceId: Type.Optional(IdSchema),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 1000 })),
    complete: Type.Optional(Type.Boolean()),
    filter: Type.Optional(
      Type.Object(
        { kind: Type.String() },
        {
          additionalProperties: true,
          description:
            'Filter tree. Nodes: {kind:"all"} | {kind:"and"|"or", nodes:[…]} | {kind:"not", node} | {kind:"level", levels:[…]} | ' +
            '{kind:"text", op:"contains"|"equals"|"startsWith"|"regex", value, caseSensitive?} | ' +
            '{kind:"field", path:"a.b", op:"eq"|"neq"|"gt"|"gte"|"lt"|"lte"|"exists"|"in"|"contains", value?} | ' +
            '{kind:"stream", op:"equals"|"prefix", value}. Depth ≤ 16, ≤ 256 nodes, regex ≤ 512 characters (RE2).',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const LogRowSchema = Type.Object(
  {
    timestamp: Type.Integer({ description: 'epoch milliseconds' }),
    level: LogLevelSchema,
    message: Type.String(),
    logStream: Type.String(),
    sourceId: Type.String(),
    logSourceId: Type.String(),
    eventId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const LogQueryResponse = Type.Object(
  {
    rows: Type.Array(LogRowSchema),
    resultCount: Type.Integer(),
    nextEndTimeMs: Type.Integer(),
    partial: Type.Boolean(),
    missedSources: Type.Array(Type.String()),
    unsupported: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

export const logQueryRoutes: FastifyPluginAsyncTypebox<{ logs: LogQueryService }> = async (app, { logs }) => {
  app.post(
    '/cloud/logs/logs-insights',
    {
      schema: {
        operationId: 'queryLogs',
        tags: ['logs'],
        summary: 'Query log rows across the selected sources, newest first',
        body: LogQueryBody,
        response: { 200: LogQueryResponse, ...errorResponses(403, 404, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      // The client hanging up stops every statement and upstream query the request started.
      const result = await untilClientGone(reply, (signal) =>
        logs.query(callerOf(request), request.body, { signal, log: request.log }),
      );
      // Fastify sends a string as it is (its response schema serializes objects only).
      const json: unknown = await logQueryJson(result);
      return reply.type('application/json; charset=utf-8').send(json as typeof result);
    },
  );
};
