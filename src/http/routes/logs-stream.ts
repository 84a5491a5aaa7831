import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { renderError } from '../../core/errors.js';
import { MAX_LOG_GROUPS, MAX_STREAM_NAMES, type LogStreamService } from '../../services/log-stream/service.js';
import type { LogStreamEvent } from '../../services/log-stream/stream.js';
import { callerOf } from '../plugins/auth.js';
import { errorResponses, IdSchema, PRINTABLE_NAME_PATTERN } from '../../core/schemas/common.js';
import { openSse, sendSse, sseComment, sseMessage } from '../sse.js';

/**
 * Names as the ingest API takes them: printable (no NUL, which PostgreSQL text cannot hold, nor any other
 * control character or lone surrogate), so a name no event can have is a 400 naming the parameter instead
 * of a failure inside the stream. The counts are checked after splitting comma-separated values.
 */
const Name = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: PRINTABLE_NAME_PATTERN });
const List = (max: number, description: string) => Type.Array(Name(max), { maxItems: 100, description });
/**
 * A prefix may be empty: a prefix every name has, so the whole of the named groups, streams created later
 * included. Otherwise printable like a name (PRINTABLE_NAME_PATTERN).
 */
const PREFIX_PATTERN = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]*$';

export const LogStreamQuery = Type.Object(
  {
    accountId: IdSchema,
    logGroups: List(5000, `Log groups, repeated or comma-separated (at least one, at most ${MAX_LOG_GROUPS})`),
    logStreamPrefix: Type.Optional(
      Type.String({
        maxLength: 512,
        pattern: PREFIX_PATTERN,
        description:
          'Stream-name prefix. Exactly one of logStreamPrefix and logStreamNames is given. An empty prefix ' +
          '(`logStreamPrefix=`) means every stream of the named groups, streams created later included.',
      }),
    ),
    logStreamNames: Type.Optional(
      List(
        5000,
        `Exact stream names, repeated or comma-separated (at most ${MAX_STREAM_NAMES}). Exactly one of ` +
          'logStreamPrefix and logStreamNames is given.',
      ),
    ),
    region: Type.Optional(Name(64)),
    startTime: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601 or epoch ms; default: the beginning' }),
    ),
    endTime: Type.Optional(
      Type.String({ maxLength: 40, description: 'ISO 8601 or epoch ms; default: now; ignored with tail' }),
    ),
    tail: Type.Optional(Type.Boolean()),
    filterPattern: Type.Optional(
      Type.String({ maxLength: 1024, description: 'CloudWatch Logs filter pattern; empty disables' }),
    ),
  },
  { additionalProperties: false },
);

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
