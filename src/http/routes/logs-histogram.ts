import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../plugins/auth.js';
import { untilClientGone } from '../plugins/client-gone.js';
import { errorResponses } from '../../core/schemas/common.js';
import { LOG_LEVELS } from '../../core/enums.js';
import { DEFAULT_BUCKETS, MAX_BUCKETS } from '../../core/log-query/histogram.js';
import type { LogQueryService } from '../../services/log-query/service.js';
import { LogQueryBody } from './logs-query.js';

export const LogHistogramBody = Type.Composite(
  [
    LogQueryBody,
    Type.Object({
      buckets: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_BUCKETS,
          default: DEFAULT_BUCKETS,
          description:
            'Equal buckets of W = ceil((end − start + 1) / buckets) ms from startTime; fewer when the window has fewer milliseconds',
        }),
      ),
    }),
  ],
  {
    additionalProperties: false,
    description: "The log query's body (limit and complete are accepted and ignored) and the number of buckets.",
  },
);

const LevelCounts = Type.Object(
  Object.fromEntries(LOG_LEVELS.map((level) => [level, Type.Optional(Type.Integer({ minimum: 1 }))])),
  { additionalProperties: false, description: 'Rows per level; only levels with rows' },
);

const BucketSchema = Type.Object(
  {
    startMs: Type.Integer({ description: 'epoch milliseconds, inclusive' }),
    endMs: Type.Integer({ description: 'epoch milliseconds, inclusive' }),
    counts: LevelCounts,
  },
  { additionalProperties: false },
);

export const LogHistogramResponse = Type.Object(
  {
    buckets: Type.Array(BucketSchema, { description: 'Every bucket of the window, oldest first, empty ones too' }),
    partial: Type.Boolean(),
    missedSources: Type.Array(Type.String()),
    unsupported: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

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
