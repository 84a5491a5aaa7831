import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { LogStreamService } from '../../services/log-stream/service.js';

/** Prometheus metrics at GET /metrics: requests by each route's operationId, and the log streams. */
export function installMetrics(app: FastifyInstance, streams?: LogStreamService): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (streams !== undefined) {
    new Gauge({
      name: 'berth_log_streams_active',
      help: 'Open log streams (server-sent events)',
      registers: [registry],
      collect() {
        this.set(streams.activeStreams);
      },
    });
    new Gauge({
      name: 'berth_log_stream_pollers_active',
      help: 'Shared upstream pollers of live tails',
      registers: [registry],
      collect() {
        this.set(streams.hub.activePollers);
      },
    });
    new Counter({
      name: 'berth_log_stream_upstream_polls_total',
      help: 'Upstream reads made for live tails (one per poller per interval, whatever the subscribers)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(streams.hub.polls);
      },
    });
  }
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

  app.get(
    '/metrics',
    { schema: { operationId: 'metrics', tags: ['operations'], security: [], hide: false } },
    async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
