import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { untilClientGone } from '../plugins/client-gone.js';
import { errorResponses } from '../../core/schemas/common.js';
import { LogHistogramBody, LogHistogramResponse } from '../../core/schemas/log-histogram.js';
import type { LogQueryService } from '../../services/log-query/service.js';

export const logHistogramRoutes: FastifyPluginAsyncTypebox<{ logs: LogQueryService }> = async (app, { logs }) => {
  app.post(
    '/cloud/logs/logs-insights/histogram',
    {
      schema: {
        operationId: 'logHistogram',
        tags: ['logs'],
        summary: 'Count the rows the log query would return, per time bucket and level',
        body: LogHistogramBody,
        response: { 200: LogHistogramResponse, ...errorResponses(403, 404, 413, 415, 422) },
      },
    },
    // The client hanging up stops every statement and upstream query the request started.
    (request, reply) =>
      untilClientGone(reply, (signal) => logs.histogram(callerOf(request), request.body, { signal, log: request.log })),
  );
};
