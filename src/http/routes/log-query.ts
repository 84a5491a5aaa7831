import { logQueryJson } from '../json-in-turns.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { untilClientGone } from '../plugins/client-gone.js';
import { errorResponses } from '../../core/schemas/common.js';
import { LogQueryBody, LogQueryResponse } from '../../core/schemas/log-query.js';
import type { LogQueryService } from '../../services/log-query/service.js';

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
