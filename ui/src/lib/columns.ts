/** Widths of the table's resizable columns (time, level, source, stream; the message takes the rest), in px. */
export const DEFAULT_WIDTHS: readonly number[] = [192, 64, 230, 170];
export const MIN_WIDTH = 40;
export const MAX_WIDTH = 800;
const KEY = 'berth.columns';

/** `widths` with column `i` set to `width`, kept within MIN_WIDTH..MAX_WIDTH. */
export function resized(widths: readonly number[], i: number, width: number): number[] {
  const next = DEFAULT_WIDTHS.map((d, j) => widths[j] ?? d);
  next[i] = Math.round(Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, width)));
  return next;
}

/** The CSS grid columns of the table (`--cols`): the fixed widths, then the message. */
export function columnTemplate(widths: readonly number[]): string {
  return `${DEFAULT_WIDTHS.map((d, i) => `${widths[i] ?? d}px`).join(' ')} minmax(0, 1fr)`;
}

/** Widths saved by an earlier resize; the defaults when there are none or they are not widths. */
export function parseWidths(raw: string | null): number[] {
  try {
    const value: unknown = raw === null ? undefined : JSON.parse(raw);
    if (Array.isArray(value) && value.length === DEFAULT_WIDTHS.length && value.every((w) => Number.isFinite(w)))
      return value.map((w, i) => resized(DEFAULT_WIDTHS, i, w)[i]!);
  } catch {
    // not JSON: the defaults
  }
  return [...DEFAULT_WIDTHS];
}

export function loadWidths(): number[] {
  try {
    return parseWidths(localStorage.getItem(KEY));
  } catch {
    return [...DEFAULT_WIDTHS];
  }
}

export function saveWidths(widths: readonly number[]): void {
  try {
    localStorage.setItem(KEY, JSON.stringify(widths));
  } catch {
    // refused (private mode): the widths last until the page is left
  }
}
