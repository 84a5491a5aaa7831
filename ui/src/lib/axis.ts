/** Ticks of the histogram's axes: round counts, and times on round local boundaries. */
import { formatCount, shortCount } from './format.js';

export interface Tick {
  value: number;
  label: string;
}

/** The count axis: 0 up to a round maximum at or above `max`, in steps of 1, 2 or 5 × 10ⁿ, at most `most` + 1 ticks. */
export function countTicks(max: number, most = 4): { top: number; ticks: Tick[] } {
  if (!(max > 0)) return { top: 1, ticks: [tick(0), tick(1)] };
  const raw = max / most;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!);
  const top = Math.ceil(max / step) * step;
  const ticks: Tick[] = [];
  for (let v = 0; v <= top; v += step) ticks.push(tick(v));
  return { top, ticks };
}

const tick = (value: number): Tick => ({ value, label: value >= 10_000 ? shortCount(value) : formatCount(value) });

const S = 1_000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const STEPS = [
  S,
  2 * S,
  5 * S,
  10 * S,
  15 * S,
  30 * S,
  M,
  2 * M,
  5 * M,
  10 * M,
  15 * M,
  30 * M,
  H,
  2 * H,
  3 * H,
  6 * H,
  12 * H,
  D,
  2 * D,
  7 * D,
];

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * Time ticks for [startMs, endMs]: the smallest round step giving at most `most` ticks, placed on multiples of the
 * step in local time (a day step at local midnight). Labels are parts of the page's one time format
 * (`YYYY-MM-DD HH:mm:ss`): `HH:mm:ss` under a minute, `HH:mm` within one day, `MM-DD HH:mm` across days, `MM-DD` for
 * day steps.
 */
export function timeTicks(startMs: number, endMs: number, most = 6): Tick[] {
  const span = Math.max(1, endMs - startMs);
  const step = STEPS.find((s) => span / s <= most) ?? Math.ceil(span / most / D) * D;
  const first = new Date(startMs);
  const sameDay = first.toDateString() === new Date(endMs).toDateString();
  const label = (ms: number): string => {
    const d = new Date(ms);
    const day = `${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    if (step < M) return `${hm}:${pad(d.getSeconds())}`;
    if (step >= D) return day;
    return sameDay ? hm : `${day} ${hm}`;
  };
  const ticks: Tick[] = [];
  for (let t = firstTick(startMs, step); t <= endMs; t = nextTick(t, step)) ticks.push({ value: t, label: label(t) });
  return ticks;
}

/** The first multiple of `step` (in local time) at or after `ms`. */
function firstTick(ms: number, step: number): number {
  const d = new Date(ms);
  if (step >= D) {
    const midnight = new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
    return midnight < ms ? new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime() : midnight;
  }
  // Local offset at `ms`, so hour steps fall on local hours in zones with a half-hour offset too.
  const offset = -d.getTimezoneOffset() * M;
  return Math.ceil((ms + offset) / step) * step - offset;
}

function nextTick(ms: number, step: number): number {
  if (step < D) return ms + step;
  const d = new Date(ms);
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() + step / D).getTime();
}
