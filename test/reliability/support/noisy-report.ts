// Figures of the noisy-neighbour test: latency percentiles of B and /healthz, A's outcomes per kind, as Markdown tables.
import type { DriverReport } from './noisy-driver.js';

export interface Sample {
  ms: number;
  status: number;
}

export interface LatencyRow {
  name: string;
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
}

/** Nearest rank: the smallest sample with at least `p` of the samples at or below it. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function latencyRow(name: string, samples: Sample[]): LatencyRow {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const s of samples) statuses[String(s.status)] = (statuses[String(s.status)] ?? 0) + 1;
  return {
    name,
    count: samples.length,
    p50: percentile(ms, 0.5),
    p95: percentile(ms, 0.95),
    p99: percentile(ms, 0.99),
    max: ms.length > 0 ? ms[ms.length - 1]! : Number.NaN,
    statuses,
  };
}

const f = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(ms < 10 ? 1 : 0) : '–');
const counts = (c: Record<string, number>) =>
  Object.entries(c)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ×${n}`)
    .join(', ');

export function latencyTable(rows: LatencyRow[]): string {
  return [
    '| requests | n | p50 ms | p95 ms | p99 ms | max ms | statuses |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.count} | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} | ${f(r.max)} | ${counts(r.statuses)} |`,
    ),
  ].join('\n');
}

export function noisyTable(report: DriverReport): string {
  return [
    '| A: kind | conn. | requests | statuses | answers | p50 ms | max ms | problems |',
    '|---|---|---|---|---|---|---|---|',
    ...report.kinds.map(
      (k) =>
        `| ${k.kind} | ${k.connections} | ${k.requests} | ${counts(k.statuses)} | ${counts(k.verdicts)}${
          k.events === undefined ? '' : `; ${k.events.toLocaleString('en')} events read`
        } | ${f(k.p50)} | ${f(k.max)} | ${k.problems.length + k.moreProblems} |`,
    ),
  ].join('\n');
}
