/**
 * What the user looks at, and its shareable URL: everything but the token. The URL is the source of truth a shared
 * link restores; the token stays in sessionStorage.
 */
import type { FilterNode } from '../../src/core/filter-tree/schema.js';

export const PRESETS = [
  { id: '5m', label: 'Last 5 minutes', ms: 5 * 60_000 },
  { id: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { id: '1h', label: 'Last 1 hour', ms: 60 * 60_000 },
  { id: '3h', label: 'Last 3 hours', ms: 3 * 60 * 60_000 },
  { id: '12h', label: 'Last 12 hours', ms: 12 * 60 * 60_000 },
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

/** The range of a first visit and of a link without one. */
export const DEFAULT_PRESET = '1h';

export const EMPTY_VIEW: View = {
  logSourceKeys: [],
  range: { kind: 'relative', preset: DEFAULT_PRESET },
  filter: { kind: 'all' },
};

/** The window a range means now, epoch ms, both ends inclusive. */
export function windowOf(range: TimeRange, now = Date.now()): { startMs: number; endMs: number } {
  if (range.kind === 'absolute') return { startMs: range.startMs, endMs: range.endMs };
  const preset = PRESETS.find((p) => p.id === range.preset) ?? PRESETS[2];
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
      : { kind: 'relative', preset: PRESETS.some((x) => x.id === p.get('range')) ? p.get('range')! : DEFAULT_PRESET };
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

/**
 * The one way the page writes a time: local, 24-hour, `YYYY-MM-DD HH:mm:ss` (the table adds `.mmm`). Native
 * date-time inputs are not used: they follow the browser's locale (e.g. "05:33:41 PM").
 */
export function formatSeconds(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** Local time with milliseconds, e.g. 2026-11-24 13:05:09.123 */
export function formatLocal(ms: number): string {
  return `${formatSeconds(ms)}.${pad(new Date(ms).getMilliseconds(), 3)}`;
}

export function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

const LOCAL_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/**
 * Epoch ms of a local time written `YYYY-MM-DD HH:mm:ss` (seconds, or the whole time of day, may be left out);
 * an error message when it is not one (e.g. 2026-02-30, 24:00).
 */
export function parseLocalTime(text: string): { ok: true; ms: number } | { ok: false; error: string } {
  const m = LOCAL_TIME.exec(text.trim());
  if (m === null) return { ok: false, error: 'Write a time as YYYY-MM-DD HH:mm:ss, e.g. 2026-11-27 09:30:00' };
  const [y, mo, d, h = 0, mi = 0, s = 0] = m.slice(1).map((x) => (x === undefined ? undefined : Number(x)));
  const date = new Date(y!, mo! - 1, d!, h, mi, s);
  const same =
    date.getFullYear() === y &&
    date.getMonth() === mo! - 1 &&
    date.getDate() === d &&
    date.getHours() === h &&
    date.getMinutes() === mi &&
    date.getSeconds() === s;
  // A local time that does not exist (a day past the month's end, 24:00, a time skipped by a clock change).
  if (!same) return { ok: false, error: `${text.trim()} is not a valid local time` };
  return { ok: true, ms: date.getTime() };
}

/** How a range reads in the toolbar: the preset's label, or its two ends. */
export function rangeLabel(range: TimeRange): string {
  if (range.kind === 'relative') return PRESETS.find((p) => p.id === range.preset)?.label ?? range.preset;
  return `${formatSeconds(range.startMs)} → ${formatSeconds(range.endMs)}`;
}

/** The next wider preset than the window `range` means (for "widen the range"), or undefined at the widest. */
export function widerPreset(range: TimeRange, now = Date.now()): string | undefined {
  const { startMs, endMs } = windowOf(range, now);
  return PRESETS.find((p) => p.ms > endMs - startMs + 1 && (range.kind === 'relative' || now - p.ms <= startMs))?.id;
}
