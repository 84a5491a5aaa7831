import { describe, expect, it } from 'vitest';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { busiest } from '../../ui/src/busiest.js';
import { countTicks, timeTicks } from '../../ui/src/lib/axis.js';
import { columnTemplate, DEFAULT_WIDTHS, parseWidths, resized } from '../../ui/src/lib/columns.js';
import { liveHeading, queryHeading } from '../../ui/src/lib/count-heading.js';
import { andCondition, messageFields } from '../../ui/src/lib/filter-edit.js';
import { parseFilterText } from '../../ui/src/lib/filter-text.js';
import { plural, shortCount } from '../../ui/src/lib/format.js';
import { filterLevels, levelTotals, rowLevels, toggleLevel } from '../../ui/src/lib/level-filter.js';
import { addRecent, isViewSearch, MAX_RECENT, parseRecent, type RecentQuery } from '../../ui/src/lib/recent.js';
import { formatSeconds, parseLocalTime, viewFromSearch, widerPreset } from '../../ui/src/view.js';

describe('plural', () => {
  it.each([
    [0, '0 live rows'],
    [1, '1 live row'],
    [2, '2 live rows'],
    [1234, '1,234 live rows'],
  ])('%d', (n, text) => expect(plural(n, 'live row')).toBe(text));

  it('short counts for an axis', () => {
    expect([950, 1_000, 1_250, 15_400, 3_400_000].map(shortCount)).toEqual(['950', '1k', '1.3k', '15k', '3.4M']);
  });
});

describe('count headings', () => {
  const base = { totalFailed: false, shown: 0, loading: false, failed: false, more: false };

  it('counts, then says how much of it the table shows', () => {
    expect(queryHeading({ ...base, total: 2700, shown: 997, more: true })).toEqual({
      total: '2,700 matching rows',
      summary: { count: '997 rows', detail: 'shown, newest first — Load older for the rest' },
    });
    expect(queryHeading({ ...base, total: 1, shown: 1 })).toEqual({
      total: '1 matching row',
      summary: { count: '1 row' },
    });
  });

  it('never says "Counting…" once the query failed', () => {
    const h = queryHeading({ ...base, totalFailed: true, failed: true, shown: 12 });
    expect(h.total).toBe('Count unavailable');
    expect(h.summary).toEqual({ count: '12 rows', detail: 'shown from before the error' });
    expect(queryHeading({ ...base, totalFailed: true, failed: true }).summary.count).toBe('No rows');
    expect(queryHeading({ ...base, loading: true }).total).toBe('Counting…');
  });

  it('a live tail says what the browser filtered out', () => {
    expect(liveHeading(1, 1)).toEqual({ count: '1 live row' });
    expect(liveHeading(9, 15)).toEqual({
      count: '9 live rows',
      detail: 'shown of 15 read — the rest filtered in the browser',
    });
  });
});

describe('axis ticks', () => {
  it('counts: 0 up to a round top, in steps of 1, 2 or 5', () => {
    expect(countTicks(0)).toEqual({
      top: 1,
      ticks: [
        { value: 0, label: '0' },
        { value: 1, label: '1' },
      ],
    });
    expect(countTicks(87, 2).ticks.map((t) => t.value)).toEqual([0, 50, 100]);
    expect(countTicks(87, 4)).toMatchObject({ top: 100 });
    expect(countTicks(3, 4).ticks.map((t) => t.value)).toEqual([0, 1, 2, 3]);
    expect(countTicks(12_345, 2).ticks.map((t) => t.label)).toEqual(['0', '10k', '20k']);
  });

  it('times: round local boundaries inside the window, labelled in the page format', () => {
    const start = new Date(2026, 10, 27, 10, 7, 13).getTime();
    const ticks = timeTicks(start, start + 60 * 60_000, 4);
    expect(ticks.map((t) => t.label)).toEqual(['10:15', '10:30', '10:45', '11:00']);
    for (const t of ticks) {
      expect(t.value).toBeGreaterThanOrEqual(start);
      expect(formatSeconds(t.value).slice(11, 16)).toBe(t.label);
    }
    expect(timeTicks(start, start + 60 * 60_000, 6)).toHaveLength(6);
    const seconds = timeTicks(start, start + 30_000, 6);
    expect(seconds[0]!.label).toBe('10:07:15');
    const days = timeTicks(start, start + 7 * 24 * 60 * 60_000, 6);
    expect(days.every((t) => /^\d\d-\d\d$/.test(t.label))).toBe(true);
    const across = timeTicks(new Date(2026, 10, 27, 20, 0).getTime(), new Date(2026, 10, 28, 8, 0).getTime(), 6);
    expect(across[0]!.label).toMatch(/^11-2[78] \d\d:\d\d$/);
  });
});

describe('the one-line filter refuses unknown field prefixes', () => {
  it.each(['msg:"cache miss"', 'msg:timeout', 'a level:error Msg:x'])('%s', (line) => {
    const r = parseFilterText(line);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatch(/unknown prefix (msg|Msg):/);
    expect(r.error).toMatch(/msg=|Msg=/i);
    expect(line.slice(r.at)).toMatch(/^msg:/i);
  });

  it('keeps URLs, quoted text and the known prefixes', () => {
    expect(parseFilterText('http://h/p')).toMatchObject({ ok: true });
    expect(parseFilterText('"msg:x"')).toEqual({ ok: true, filter: { kind: 'text', op: 'contains', value: 'msg:x' } });
    expect(parseFilterText('level:error stream:web/* code:exists')).toMatchObject({ ok: true });
  });

  it('parses the example of the README and the placeholder', () => {
    expect(parseFilterText('timeout level:error,warn stream:web/* status>=500 -"health check"')).toEqual({
      ok: true,
      filter: {
        kind: 'and',
        nodes: [
          { kind: 'text', op: 'contains', value: 'timeout' },
          { kind: 'level', levels: ['ERROR', 'WARN'] },
          { kind: 'stream', op: 'prefix', value: 'web/' },
          { kind: 'field', path: 'status', op: 'gte', value: 500 },
          { kind: 'not', node: { kind: 'text', op: 'contains', value: 'health check' } },
        ],
      },
    });
  });
});

describe('the level facet edits the top-level level condition', () => {
  const text: FilterNode = { kind: 'text', op: 'contains', value: 'x' };
  it('adds one, extends it, and removes it with its last level', () => {
    const a = toggleLevel({ kind: 'all' }, 'ERROR');
    expect(a).toEqual({ kind: 'level', levels: ['ERROR'] });
    const b = toggleLevel(a, 'FATAL');
    expect(b).toEqual({ kind: 'level', levels: ['ERROR', 'FATAL'] });
    expect(toggleLevel(toggleLevel(b, 'FATAL'), 'ERROR')).toEqual({ kind: 'all' });
  });

  it('keeps the rest of the filter', () => {
    const a = toggleLevel(text, 'WARN');
    expect(a).toEqual({ kind: 'and', nodes: [text, { kind: 'level', levels: ['WARN'] }] });
    expect(filterLevels(a)).toEqual(['WARN']);
    expect(toggleLevel(a, 'WARN')).toEqual(text);
    const or: FilterNode = { kind: 'or', nodes: [text, text] };
    expect(toggleLevel(or, 'INFO')).toEqual({ kind: 'and', nodes: [or, { kind: 'level', levels: ['INFO'] }] });
    expect(filterLevels(or)).toBeUndefined();
  });

  it('counts per level: the histogram totals, and a list of rows', () => {
    expect(levelTotals([{ counts: { ERROR: 2, INFO: 5 } }, { counts: { ERROR: 1 } }, { counts: {} }])).toEqual({
      ERROR: 3,
      INFO: 5,
    });
    expect(rowLevels([{ level: 'WARN' }, { level: 'WARN' }, { level: 'INFO' }])).toEqual({ WARN: 2, INFO: 1 });
  });
});

describe('recent queries', () => {
  const entry = (search: string): RecentQuery => ({ search, filterText: '', sourceLabel: 's', rangeLabel: 'r' });
  it('keeps the last ten views, newest first, once each', () => {
    let list: RecentQuery[] = [];
    for (let i = 0; i < 15; i++) list = addRecent(list, entry(`?range=1h&filter=${i}`));
    list = addRecent(list, entry('?range=1h&filter=12'));
    expect(list).toHaveLength(MAX_RECENT);
    expect(list[0]!.search).toBe('?range=1h&filter=12');
    expect(list.filter((e) => e.search.endsWith('=12'))).toHaveLength(1);
  });

  it('reads back only views: never anything with another key (a token)', () => {
    expect(isViewSearch('?org=a&env=b&range=1h&filter=%7B%7D')).toBe(true);
    expect(isViewSearch('?token=berth_x')).toBe(false);
    const stored = JSON.stringify([entry('?range=1h'), entry('?token=x'), { search: 1 }, entry('nope')]);
    expect(parseRecent(stored).map((e) => e.search)).toEqual(['?range=1h']);
    expect(parseRecent('not json')).toEqual([]);
    expect(parseRecent(null)).toEqual([]);
  });
});

describe('times typed in the range panel', () => {
  it('reads YYYY-MM-DD HH:mm:ss as local time, and refuses what is not one', () => {
    const r = parseLocalTime('2026-11-27 17:33:41');
    expect(r).toEqual({ ok: true, ms: new Date(2026, 10, 27, 17, 33, 41).getTime() });
    expect(formatSeconds((r as { ms: number }).ms)).toBe('2026-11-27 17:33:41');
    expect(parseLocalTime('2026-11-27')).toMatchObject({ ok: true });
    for (const bad of ['05:33:41 PM', '2026-02-30 10:00:00', '2026-11-27 24:00:00', '27/11/2026', ''])
      expect(parseLocalTime(bad)).toMatchObject({ ok: false });
  });

  it('widens to the next preset', () => {
    const now = Date.now();
    expect(widerPreset({ kind: 'relative', preset: '1h' }, now)).toBe('3h');
    expect(widerPreset({ kind: 'relative', preset: '7d' }, now)).toBeUndefined();
    expect(widerPreset({ kind: 'absolute', startMs: now - 30 * 60_000, endMs: now - 20 * 60_000 }, now)).toBe('1h');
  });

  it('a link without a range looks at the last hour', () => {
    expect(viewFromSearch('?env=x').range).toEqual({ kind: 'relative', preset: '1h' });
  });
});

describe('column widths', () => {
  it('are clamped, and fall back to the defaults', () => {
    expect(resized(DEFAULT_WIDTHS, 2, 5)[2]).toBe(40);
    expect(resized(DEFAULT_WIDTHS, 2, 5000)[2]).toBe(800);
    expect(parseWidths('[1,2]')).toEqual([...DEFAULT_WIDTHS]);
    expect(parseWidths('[100, 60, 300, 10]')).toEqual([100, 60, 300, 40]);
    expect(columnTemplate([100, 60, 300, 40])).toBe('100px 60px 300px 40px minmax(0, 1fr)');
  });
});

describe('the first view', () => {
  it('is the busiest environment; the first of equals; the first when none was counted', () => {
    expect(
      busiest([
        { id: 'a', count: 3 },
        { id: 'b', count: 9 },
        { id: 'c', count: 9 },
      ]),
    ).toBe('b');
    expect(
      busiest([
        { id: 'a', count: undefined },
        { id: 'b', count: undefined },
      ]),
    ).toBe('a');
    expect(busiest([])).toBeUndefined();
  });
});

describe('filtering by a value of a row', () => {
  const text: FilterNode = { kind: 'text', op: 'contains', value: 'x' };
  const field: FilterNode = { kind: 'field', path: 'status', op: 'eq', value: 504 };
  it('ANDs the condition to the filter, once', () => {
    expect(andCondition({ kind: 'all' }, field)).toEqual(field);
    expect(andCondition(text, field)).toEqual({ kind: 'and', nodes: [text, field] });
    const both = andCondition(text, field);
    expect(andCondition(both, field)).toBe(both);
    expect(andCondition(field, field)).toBe(field);
  });

  it('lists the scalar fields a condition can name, nested ones by dotted path', () => {
    const message = JSON.stringify({
      level: 'error',
      status: 504,
      ok: false,
      user: { id: 7, tags: ['a'], 'bad key': 1 },
      gone: null,
      '0x': 1,
    });
    expect(messageFields(message)).toEqual([
      { path: 'level', value: 'error' },
      { path: 'status', value: 504 },
      { path: 'ok', value: false },
      { path: 'user.id', value: 7 },
      { path: 'gone', value: null },
    ]);
    expect(messageFields('ERROR not json')).toEqual([]);
    expect(messageFields('[1,2]')).toEqual([]);
    expect(
      messageFields(JSON.stringify(Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`k${i}`, i])))),
    ).toHaveLength(40);
  });
});
