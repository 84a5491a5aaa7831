/**
 * Recent queries: the last few views a user ran (filter, range and sources), kept in localStorage. A view is the
 * page's query string, which never holds the token.
 */

export interface RecentQuery {
  /** `?org=…&env=…&range=…&filter=…`: viewToSearch of the view. */
  search: string;
  /** The one-line filter as typed ('' for none). */
  filterText: string;
  /** What it looked at and when, as the toolbar said it. */
  sourceLabel: string;
  rangeLabel: string;
}

export const RECENT_KEY = 'berth.recent-queries';
export const MAX_RECENT = 10;

/** `list` with `entry` first; an entry for the same view goes, and at most MAX_RECENT are kept. */
export function addRecent(list: readonly RecentQuery[], entry: RecentQuery): RecentQuery[] {
  return [entry, ...list.filter((e) => e.search !== entry.search)].slice(0, MAX_RECENT);
}

/** What localStorage holds, whatever it holds: only well-formed entries, and never one carrying a token. */
export function parseRecent(raw: string | null): RecentQuery[] {
  if (raw === null) return [];
  try {
    const value: unknown = JSON.parse(raw);
    if (!Array.isArray(value)) return [];
    return value
      .filter(
        (e): e is RecentQuery =>
          e !== null &&
          typeof e === 'object' &&
          ['search', 'filterText', 'sourceLabel', 'rangeLabel'].every((k) => typeof e[k] === 'string') &&
          isViewSearch(e.search),
      )
      .slice(0, MAX_RECENT);
  } catch {
    return [];
  }
}

/** The keys a view's query string has (view.ts); anything else, a token above all, is not a view. */
const VIEW_KEYS = new Set(['org', 'env', 'sources', 'resource', 'range', 'from', 'to', 'filter']);

export function isViewSearch(search: string): boolean {
  return search.startsWith('?') && [...new URLSearchParams(search).keys()].every((k) => VIEW_KEYS.has(k));
}

export function loadRecent(storage: Pick<Storage, 'getItem'> = localStorage): RecentQuery[] {
  try {
    return parseRecent(storage.getItem(RECENT_KEY));
  } catch {
    return [];
  }
}

export function saveRecent(list: readonly RecentQuery[], storage: Pick<Storage, 'setItem'> = localStorage): void {
  try {
    storage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, MAX_RECENT)));
  } catch {
    // Storage full or refused (private mode): recent queries are a convenience.
  }
}
