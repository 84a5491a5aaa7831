import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError, appError } from '../../core/errors.js';
import { bearerToken } from './auth.js';

/**
 * Who may see which series of GET /metrics (issue 20: no tenant is named to strangers).
 *
 * The scrape without credentials is the public view: every `berth_*` series keeps only the labels below, which
 * name no tenant (routes, methods, statuses, buckets, reasons, modes, states), and the series that differed only
 * in any other label (`organization`, or whatever a later metric adds) are summed into one. A label not listed here
 * is summed away, so a new per-tenant label stays private until it is listed: default deny. Node's and the
 * process's own metrics (`nodejs_*`, `process_*`, prom-client's defaults) are process-wide and kept as they are.
 *
 * The full view, per-organization series included, needs `Authorization: Bearer <METRICS_TOKEN>`; with
 * METRICS_TOKEN empty it is never served and the header is ignored, as on the other operational routes.
 */
export const PUBLIC_LABELS: ReadonlySet<string> = new Set([
  'operation',
  'method',
  'status',
  'le',
  'quantile',
  'reason',
  'mode',
  'state',
]);

/** prom-client's default metrics: process-wide, labelled by version, heap space, GC kind, resource type. */
const PROCESS_METRIC = /^(nodejs|process)_/;

export type MetricsView = 'public' | 'full';

/**
 * The view a scrape gets. With METRICS_TOKEN set, a request without Authorization gets the public view, the
 * token (compared in constant time) the full one, and anything else 401 `auth:token:invalid`, so a scraper
 * whose token is wrong fails loudly instead of quietly losing the per-organization series.
 */
export function metricsAccess(token: string): (request: FastifyRequest) => MetricsView {
  if (token === '') return () => 'public';
  const expected = digest(token);
  return (request) => {
    const given = bearerToken(request);
    if (given instanceof AppError) {
      if (given.code === 'auth:token:missing') return 'public';
      throw notTheToken();
    }
    // Both sides hashed first: equal lengths, and the time taken says nothing about the token.
    if (!timingSafeEqual(digest(given), expected)) throw notTheToken();
    return 'full';
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function notTheToken(): AppError {
  return appError('auth:token:invalid', {
    description: 'This is not the metrics token (METRICS_TOKEN). Without a token, /metrics serves its public view.',
  });
}

/** One collected metric, as `Registry.getMetricsAsJSON()` answers it. */
export type Metric = Awaited<ReturnType<Registry['getMetricsAsJSON']>>[number];
type Sample = Metric['values'][number] & { metricName?: string };

/** The public view of the collected metrics: tenant labels summed away (see {@link PUBLIC_LABELS}). */
export function publicView(metrics: Metric[]): Metric[] {
  return metrics.map((metric) => {
    if (PROCESS_METRIC.test(metric.name)) return metric;
    const removed = new Set<string>();
    const sums = new Map<string, Sample>();
    for (const sample of metric.values as Sample[]) {
      const labels: Record<string, string | number> = {};
      for (const [name, value] of Object.entries(sample.labels)) {
        if (value === undefined) continue;
        if (PUBLIC_LABELS.has(name)) labels[name] = value;
        else removed.add(name);
      }
      const key = JSON.stringify([
        sample.metricName ?? '',
        Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)),
      ]);
      const sum = sums.get(key);
      if (sum !== undefined) sum.value += sample.value;
      else
        sums.set(key, { value: sample.value, labels, ...(sample.metricName ? { metricName: sample.metricName } : {}) });
    }
    const help =
      removed.size === 0
        ? metric.help
        : `${metric.help} (summed over ${[...removed].sort().join(', ')}; per-tenant series need METRICS_TOKEN)`;
    return { ...metric, help, values: [...sums.values()] };
  });
}

/** Prometheus text exposition format 0.0.4 (what prom-client's `Registry.metrics()` writes). */
export function renderMetrics(metrics: Metric[]): string {
  const blocks = metrics.map((metric) => {
    const lines = [`# HELP ${metric.name} ${escapeHelp(metric.help)}`, `# TYPE ${metric.name} ${metric.type}`];
    for (const sample of metric.values as Sample[]) {
      const labels = Object.entries(sample.labels)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => `${name}="${escapeLabelValue(String(value))}"`);
      const name = sample.metricName ?? metric.name;
      lines.push(`${name}${labels.length > 0 ? `{${labels.join(',')}}` : ''} ${formatValue(sample.value)}`);
    }
    return lines.join('\n');
  });
  return `${blocks.join('\n\n')}\n`;
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}
