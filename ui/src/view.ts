/**
 * What the user looks at, and its shareable URL: everything but the token. The URL is the source of truth a shared
 * link restores; the token stays in sessionStorage.
 */
import type { FilterNode } from '../../src/core/filter-tree/schema.js';

export const PRESETS = [
  { id: '5m', label: 'Last 5 minutes', ms: 5 * 60_000 },
  { id: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { id: '1h', label: 'Last hour', ms: 60 * 60_000 },
  { id: '6h', label: 'Last 6 hours', ms: 6 * 60 * 60_000 },
  { id: '24h', label: 'Last 24 hours', ms: 24 * 60 * 60_000 },
  { id: '7d', label: 'Last 7 days', ms: 7 * 24 * 60 * 60_000 },
] as const;

export type TimeRange = { kind: 'relative'; preset: string } | { kind: 'absolute'; startMs: number; endMs: number };

export interface View {
  organizationId?: string;
  environmentId?: string;
  /** `<moduleInstanceId>::<logSourceId>`; empty with an environment: all its sources. */
  logSourceKeys: string[];
  deploymentResourceId?: string;
  range: TimeRange;
  filter: FilterNode;
}

export const EMPTY_VIEW: View = {
  logSourceKeys: [],
  range: { kind: 'relative', preset: '15m' },
  filter: { kind: 'all' },
};

/** The window a range means now, epoch ms, both ends inclusive. */
export function windowOf(range: TimeRange, now = Date.now()): { startMs: number; endMs: number } {
  if (range.kind === 'absolute') return { startMs: range.startMs, endMs: range.endMs };
  const preset = PRESETS.find((p) => p.id === range.preset) ?? PRESETS[1];
  return { startMs: now - preset.ms, endMs: now };
}

export function viewToSearch(view: View): string {
  const p = new URLSearchParams();
  if (view.organizationId) p.set('org', view.organizationId);
  if (view.environmentId) p.set('env', view.environmentId);
  if (view.logSourceKeys.length > 0) p.set('sources', view.logSourceKeys.join(','));
  if (view.deploymentResourceId) p.set('resource', view.deploymentResourceId);
  if (view.range.kind === 'relative') p.set('range', view.range.preset);
  else {
    p.set('from', String(view.range.startMs));
    p.set('to', String(view.range.endMs));
  }
  if (view.filter.kind !== 'all') p.set('filter', JSON.stringify(view.filter));
  return `?${p.toString()}`;
}

export function viewFromSearch(search: string): View {
  const p = new URLSearchParams(search);
  const from = Number(p.get('from'));
  const to = Number(p.get('to'));
  const range: TimeRange =
    p.has('from') && p.has('to') && Number.isSafeInteger(from) && Number.isSafeInteger(to) && from <= to
      ? { kind: 'absolute', startMs: from, endMs: to }
      : { kind: 'relative', preset: PRESETS.some((x) => x.id === p.get('range')) ? p.get('range')! : '15m' };
  let filter: FilterNode = { kind: 'all' };
  const raw = p.get('filter');
  if (raw !== null) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed !== null && typeof parsed === 'object' && 'kind' in parsed) filter = parsed as FilterNode;
    } catch {
      // A broken link keeps the rest of the view; the filter starts empty.
    }
  }
  const sources = p.get('sources');
  return {
    organizationId: p.get('org') ?? undefined,
    environmentId: p.get('env') ?? undefined,
    logSourceKeys: sources ? sources.split(',').filter((s) => s !== '') : [],
    deploymentResourceId: p.get('resource') ?? undefined,
    range,
    filter,
  };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Local time with milliseconds, e.g. 2026-11-24 13:05:09.123 */
export function formatLocal(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
  );
}

export function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** `<input type="datetime-local">` value for epoch ms (local time, seconds precision). */
export function toDateTimeLocal(ms: number): string {
  return formatLocal(ms).slice(0, 19).replace(' ', 'T');
}

export function fromDateTimeLocal(value: string): number | undefined {
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}
