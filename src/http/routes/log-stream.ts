import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { renderError } from '../../core/errors.js';
import type { LogStreamService } from '../../services/log-stream/service.js';
import type { LogStreamEvent } from '../../services/log-stream/stream.js';
import { callerOf } from '../plugins/auth.js';
import { errorResponses } from '../../core/schemas/common.js';
import { LogStreamQuery } from '../../core/schemas/log-stream.js';
import { openSse, sendSse, sseComment, sseMessage } from '../sse.js';

export const logStreamRoutes: FastifyPluginAsyncTypebox<{ streams: LogStreamService }> = async (app, { streams }) => {
  // A stream never ends by itself with tail=true, and server.close() waits for open connections: end every
  // stream (isFinal: true) before the server closes, whoever closes the app.
  app.addHook('preClose', async () => {
    streams.close();
  });
  app.get(
    '/cloud/logs/stream',
    {
      schema: {
        operationId: 'streamLogs',
        tags: ['logs'],
        summary: 'Server-sent events: historical events, then (tail=true) new ones as they arrive',
        description:
          'Each message is `data: {"events":[…],"isFinal":false}` with an `id:` to resume from (Last-Event-ID); the last has ' +
          '`isFinal: true`. `: keep-alive` comments keep idle connections open; a failure after the start is `event: error` with ' +
          'the error object, then the final message.',
        querystring: LogStreamQuery,
        response: {
          200: {
            description:
              'text/event-stream of {events: [{logStreamName, message, timestamp, ingestionTime, level}], isFinal}',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errorResponses(403, 404, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const caller = callerOf(request);
      const lastEventId = request.headers['last-event-id'];
      // Failures up to here are ordinary error responses; from here on they are events of the stream.
      const stream = await streams.open(caller, request.query, {
        lastEventId: typeof lastEventId === 'string' ? lastEventId : undefined,
        log: request.log,
      });
      reply.hijack();
      try {
        openSse(reply.raw, { 'x-request-id': request.id });
      } catch (error) {
        stream.destroy();
        throw error;
      }
      const frame = (event: LogStreamEvent): string => {
        switch (event.kind) {
          case 'events':
            return sseMessage({ id: event.id, data: { events: event.events, isFinal: false } });
          case 'keep-alive':
            return sseComment('keep-alive');
          case 'error':
            return sseMessage({ event: 'error', data: renderError(event.error, request.id, caller.superadmin) });
          case 'final':
            return sseMessage({ id: event.id, data: { events: [], isFinal: true } });
        }
      };
      // Not awaited: the stream outlives the handler (a live tail runs for hours).
      sendSse(stream, frame, reply.raw).catch((error: unknown) =>
        request.log.error({ err: error }, 'log stream failed'),
      );
    },
  );
};
