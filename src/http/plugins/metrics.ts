import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HeavyWork } from '../../services/heavy-work.js';
import type { ThrottleStats } from './rate-limit.js';
import type { ConnectionLimits } from './connections.js';
import type { LogStreamService } from '../../services/log-stream/service.js';
import type { FilterPool, FilterPoolStats } from '../../services/filter-pool/pool.js';
import { errorResponses } from '../../core/schemas/common.js';
import { metricsAccess, publicView, renderMetrics } from './metrics-view.js';

/**
 * Prometheus metrics at GET /metrics: requests by each route's operationId, and the log streams. Without
 * credentials no series names a tenant (per-organization series summed); `Authorization: Bearer <METRICS_TOKEN>`
 * gets them per organization (metrics-view.ts).
 */
export function installMetrics(
  app: FastifyInstance,
  streams?: LogStreamService,
  heavy?: HeavyWork,
  throttled?: ThrottleStats,
  connections?: ConnectionLimits,
  access: { metricsToken: string } = { metricsToken: '' },
  filters?: FilterPool,
): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (filters !== undefined) installFilterMetrics(registry, filters);
  if (connections !== undefined) installConnectionMetrics(registry, connections);
  if (throttled !== undefined) {
    new Counter({
      name: 'berth_rate_limited_total',
      help: 'Requests refused by the request guards, by reason (principal, failed-auth, pressure) and organization',
      labelNames: ['organization', 'reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { organization, reason, count } of throttled.entries()) this.inc({ organization, reason }, count);
      },
    });
  }
  if (heavy !== undefined) installHeavyWorkMetrics(registry, heavy, streams);
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
    new Gauge({
      name: 'berth_log_tail_upstreams',
      help: 'Upstreams of aws live tails this replica holds the lease of: a Live Tail session, or polling FilterLogEvents where StartLiveTail is refused (one per key in the cluster)',
      labelNames: ['mode'],
      registers: [registry],
      collect() {
        const { live, poll } = streams.upstreams();
        this.set({ mode: 'live' }, live);
        this.set({ mode: 'poll' }, poll);
      },
    });
    new Counter({
      name: 'berth_log_tail_fallbacks_total',
      help: 'Times an aws live tail fell back to polling FilterLogEvents because StartLiveTail was refused or unavailable',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(streams.fallbacks());
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

  app.addHook('onResponse', (request, reply, done) => {
    const schema = request.routeOptions.schema as { operationId?: string } | undefined;
    const operation = schema?.operationId ?? (request.routeOptions.url ? 'unknown' : 'not-found');
    const status = String(reply.statusCode);
    duration.observe({ operation, method: request.method, status }, reply.elapsedTime / 1000);
    if (reply.statusCode >= 400) errors.inc({ operation, status });
    done();
  });

  const viewOf = metricsAccess(access.metricsToken);
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'metrics',
        tags: ['operations'],
        description:
          'Prometheus text format. Without credentials no series names a tenant: per-organization series are summed. ' +
          'With `Authorization: Bearer <METRICS_TOKEN>` they are served per organization; any other credential is ' +
          '401 when METRICS_TOKEN is set, and ignored when it is not.',
        security: [],
        hide: false,
        response: errorResponses(),
      },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const metrics = await registry.getMetricsAsJSON();
      return reply
        .type(registry.contentType)
        .header('cache-control', 'no-store')
        .send(renderMetrics(view === 'full' ? metrics : publicView(metrics)));
    },
  );
}

/** The fair budget of heavy work: running and waiting now, and per organization what waited or was refused. */
function installHeavyWorkMetrics(registry: Registry, heavy: HeavyWork, streams: LogStreamService | undefined): void {
  new Gauge({
    name: 'berth_heavy_work_running',
    help: 'Heavy work (log queries, history batches, ingest) running now',
    registers: [registry],
    collect() {
      this.set(heavy.running);
    },
  });
  new Gauge({
    name: 'berth_heavy_work_waiting',
    help: 'Heavy work waiting for its turn now',
    registers: [registry],
    collect() {
      this.set(heavy.waiting);
    },
  });
  const perOrganization = (
    name: string,
    help: string,
    read: (s: { queued: number; throttled: number; waitSeconds: number }) => number,
  ) =>
    new Counter({
      name,
      help,
      labelNames: ['organization'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [organization, stats] of heavy.stats()) this.inc({ organization }, read(stats));
      },
    });
  perOrganization(
    'berth_heavy_work_queued_total',
    'Heavy work that waited for its turn, by organization',
    (s) => s.queued,
  );
  perOrganization(
    'berth_heavy_work_throttled_total',
    'Heavy work refused with 429 after waiting HEAVY_QUEUE_MS, by organization',
    (s) => s.throttled,
  );
  perOrganization(
    'berth_heavy_work_wait_seconds_total',
    'Time heavy work waited for its turn, by organization',
    (s) => s.waitSeconds,
  );
  if (streams !== undefined) {
    new Counter({
      name: 'berth_log_streams_refused_total',
      help: 'Log streams refused with 429 before they started (a stream share was full), by organization',
      labelNames: ['organization'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [organization, n] of streams.refused) this.inc({ organization }, n);
      },
    });
  }
}

/** Client connections: open and idle now, refused as they arrived (per reason), and idle ones closed for room. */
function installConnectionMetrics(registry: Registry, connections: ConnectionLimits): void {
  new Gauge({
    name: 'berth_connections_open',
    help: 'Open client connections, and of them idle ones (no request in flight)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.set({ state: 'all' }, connections.open);
      this.set({ state: 'idle' }, connections.idle);
    },
  });
  new Counter({
    name: 'berth_connections_refused_total',
    help: 'Connections closed as they arrived: address (MAX_CONNECTIONS_PER_ADDRESS), process (MAX_CONNECTIONS, none idle)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(connections.refused)) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'berth_connections_idle_closed_total',
    help: 'Idle keep-alive connections closed at MAX_CONNECTIONS to make room for a new one (the longest idle first)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(connections.idleClosed);
    },
  });
}

/** The filter pool: batches evaluated, their worker time, and runs stopped or refused at their CPU budget. */
function installFilterMetrics(registry: Registry, filters: FilterPool): void {
  const counter = (name: string, help: string, read: (s: Readonly<FilterPoolStats>) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read(filters.stats));
      },
    });
  counter('berth_filter_batches_total', 'Batches of rows evaluated in the filter pool', (s) => s.batches);
  counter('berth_filter_messages_total', 'Messages evaluated in the filter pool', (s) => s.messages);
  counter('berth_filter_cpu_seconds_total', 'Worker-thread time spent on batches that finished', (s) => s.cpuSeconds);
  counter(
    'berth_filter_batches_stopped_total',
    'Batches stopped at their source’s CPU budget (LOG_FILTER_CPU_MS): the worker thread was terminated and replaced',
    (s) => s.stopped,
  );
  counter(
    'berth_filter_batches_refused_total',
    'Batches not run: one message’s worst case (program size × length) exceeded what was left of the budget',
    (s) => s.refused,
  );
  new Gauge({
    name: 'berth_filter_batches_waiting',
    help: 'Batches waiting for a filter thread now',
    registers: [registry],
    collect() {
      this.set(filters.waiting);
    },
  });
}
