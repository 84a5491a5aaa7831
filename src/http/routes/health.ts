import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { appError } from '../../core/errors.js';
import type { HealthService } from '../../services/health.js';
import { errorResponses } from '../../core/schemas/common.js';

const Status = Type.Object({ status: Type.String() });

/** A readiness probe answers within this even when the database blackholes its packets. */
export const READY_PING_TIMEOUT_MS = 2_000;

/** Unauthenticated operational routes: liveness, readiness, the OpenAPI document. */
export const healthRoutes: FastifyPluginAsyncTypebox<{
  health: HealthService;
  isAcceptingTraffic: () => boolean;
  /** True while requests are shed for event-loop lag (plugins/pressure.ts): the replica is not ready then. */
  isUnderPressure?: () => boolean;
}> = async (app, { health, isAcceptingTraffic, isUnderPressure = () => false }) => {
  app.get(
    '/healthz',
    { schema: { operationId: 'healthz', tags: ['operations'], security: [], response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'readyz',
        tags: ['operations'],
        security: [],
        response: { 200: Status, ...errorResponses(503) },
      },
    },
    async () => {
      if (!isAcceptingTraffic())
        throw appError('internal:server:unavailable', { description: 'shutting down', internal: false });
      if (isUnderPressure())
        throw appError('internal:server:unavailable', {
          description: 'overloaded',
          internal: false,
          headers: { 'retry-after': '1' },
        });
      try {
        await health.ready(READY_PING_TIMEOUT_MS);
      } catch (error) {
        throw appError('internal:server:unavailable', {
          description: 'database unreachable',
          internal: false,
          cause: error,
        });
      }
      return { status: 'ready' };
    },
  );

  app.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'openapi',
        tags: ['operations'],
        security: [],
        response: { 200: Type.Object({}, { additionalProperties: true }) },
      },
    },
    async () => app.swagger(),
  );
};
