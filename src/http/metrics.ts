import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics at GET /metrics, labelled by each route's operationId. */
export function installMetrics(app: FastifyInstance): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'berth_http_request_duration_seconds',
    help: 'HTTP request duration by operation and status',
    labelNames: ['operation', 'method', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'berth_http_errors_total',
    help: 'Error responses by operation and status',
    labelNames: ['operation', 'status'],
    registers: [registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    const schema = request.routeOptions.schema as { operationId?: string } | undefined;
    const operation = schema?.operationId ?? (request.routeOptions.url ? 'unknown' : 'not-found');
    const status = String(reply.statusCode);
    duration.observe({ operation, method: request.method, status }, reply.elapsedTime / 1000);
    if (reply.statusCode >= 400) errors.inc({ operation, status });
  });

  app.get('/metrics', { schema: { operationId: 'metrics', tags: ['operations'], security: [], hide: false } }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
