import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { mergeNewestFirst, newerFirst } from '../../src/core/log-query/merge.js';
import { cutPage, type UnitResult } from '../../src/core/log-query/page.js';
import { MAX_LIMIT } from '../../src/services/log-query/service.js';
import { parseTime } from '../../src/core/log-time.js';

interface Row {
  timestamp: number;
  eventId: string;
}

const row = (timestamp: number, eventId: string): Row => ({ timestamp, eventId });
const ids = (rows: readonly Row[]) => rows.map((r) => r.eventId);
/** `n` rows of one millisecond, eventIds descending (the order a backend returns them). */
const burst = (timestamp: number, n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => row(timestamp, `${tag}${String(n - 1 - i).padStart(4, '0')}`));
const exhausted = (rows: Row[], startMs: number): UnitResult<Row> => ({ rows, coveredAfter: startMs - 1 });

describe('mergeNewestFirst', () => {
  it('merges lists newest first, the greater eventId first within a millisecond', () => {
    const a = [row(9, 'a'), row(5, 'c'), row(5, 'a'), row(1, 'z')];
    const b = [row(7, 'x'), row(5, 'b'), row(2, 'y')];
    const c: Row[] = [];
    expect(ids([...mergeNewestFirst([a, b, c])])).toEqual(['a', 'x', 'c', 'b', 'a', 'y', 'z']);
  });

  it('handles no lists, empty lists and one list', () => {
    expect([...mergeNewestFirst<Row>([])]).toEqual([]);
    expect([...mergeNewestFirst<Row>([[], []])]).toEqual([]);
    const only = [row(3, 'b'), row(3, 'a'), row(1, 'c')];
    expect([...mergeNewestFirst([only])]).toEqual(only);
  });

  it('is a sort of the concatenation by newerFirst (property)', () => {
    const lists = fc.array(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 50 })), { maxLength: 30 }),
      {
        maxLength: 6,
      },
    );
    fc.assert(
      fc.property(lists, (raw) => {
        const sorted = raw.map((list, li) =>
          list.map(([t, e], i) => row(t, `${String(e).padStart(3, '0')}-${li}-${i}`)).sort(newerFirst),
        );
        const expected = sorted.flat().sort(newerFirst);
        expect([...mergeNewestFirst(sorted)]).toEqual(expected);
      }),
      { numRuns: 300, seed: 11 },
    );
  });
});

describe('cutPage', () => {
  it('answers an empty page and 0 when nothing was selected or nothing matched', () => {
    expect(cutPage<Row>([], 10, 100)).toEqual({ rows: [], nextEndTimeMs: 0 });
    expect(cutPage<Row>([exhausted([], 100), exhausted([], 100)], 10, 100)).toEqual({ rows: [], nextEndTimeMs: 0 });
  });

  it('returns everything and 0 when every unit read its whole window and it fits', () => {
    const a = [row(150, 'a2'), row(120, 'a1')];
    const b = [row(130, 'b1'), row(100, 'b0')];
    expect(cutPage([exhausted(a, 100), exhausted(b, 100)], 4, 100)).toEqual({
      rows: [row(150, 'a2'), row(130, 'b1'), row(120, 'a1'), row(100, 'b0')],
      nextEndTimeMs: 0,
    });
  });

  it('cuts at the limit between milliseconds and continues one millisecond below the last row', () => {
    const rows = [row(150, 'e'), row(140, 'd'), row(130, 'c'), row(120, 'b')];
    expect(cutPage([exhausted(rows, 100)], 2, 100)).toEqual({ rows: rows.slice(0, 2), nextEndTimeMs: 139 });
  });

  it('never splits a millisecond: rows of the millisecond the limit falls in are left for the next page', () => {
    const rows = [row(150, 'e'), ...burst(140, 5, 't'), row(130, 'a')];
    const page = cutPage([exhausted(rows, 100)], 3, 100);
    expect(page).toEqual({ rows: [row(150, 'e')], nextEndTimeMs: 140 });
  });

  it('returns a millisecond whole when it is the whole page, even past the limit', () => {
    // Regression: the rest of the millisecond used to be read from an already closed generator,
    // so only one row past the limit came back and the others were lost for good.
    const rows = [...burst(140, 7, 'x'), row(130, 'a')];
    const page = cutPage([exhausted(rows, 100)], 3, 100);
    expect(ids(page.rows)).toEqual(ids(burst(140, 7, 'x')));
    expect(page.nextEndTimeMs).toBe(139);
  });

  it('returns a whole millisecond spread over several units', () => {
    const a = burst(140, 4, 'a');
    const b = burst(140, 3, 'b');
    const page = cutPage([exhausted([...a, row(101, 'a-old')], 100), exhausted(b, 100)], 2, 100);
    expect(page.rows).toHaveLength(7);
    expect(page.rows.every((r) => r.timestamp === 140)).toBe(true);
    expect(page.nextEndTimeMs).toBe(139);
  });

  it('answers 0 after a whole millisecond at the very start of the window', () => {
    const page = cutPage([exhausted(burst(100, 5, 's'), 100)], 2, 100);
    expect(page).toEqual({ rows: burst(100, 5, 's'), nextEndTimeMs: 0 });
  });

  it('keeps no row at or below a unit coverage boundary, and continues from it: a short page is not the end', () => {
    // Unit a read only down to 120 (its raw rows were cut there); unit b read everything.
    const a: UnitResult<Row> = { rows: [row(150, 'a3'), row(120, 'a1')], coveredAfter: 120 };
    const b = exhausted([row(140, 'b2'), row(110, 'b1')], 100);
    expect(cutPage([a, b], 10, 100)).toEqual({ rows: [row(150, 'a3'), row(140, 'b2')], nextEndTimeMs: 120 });
    // Nothing above the boundary matched: an empty page that still points further back.
    expect(cutPage([{ rows: [], coveredAfter: 130 }, exhausted([], 100)], 10, 100)).toEqual({
      rows: [],
      nextEndTimeMs: 130,
    });
  });

  it('uses the highest boundary of all units', () => {
    const a: UnitResult<Row> = { rows: [row(150, 'a')], coveredAfter: 110 };
    const b: UnitResult<Row> = { rows: [row(145, 'b'), row(125, 'b2')], coveredAfter: 125 };
    expect(cutPage([a, b], 10, 100)).toEqual({ rows: [row(150, 'a'), row(145, 'b')], nextEndTimeMs: 125 });
  });
});

// ---------------------------------------------------------------------------------------------
// Walking a window page by page, as a client does, with units simulated the way the service
// runs them (src/services/log-query/service.ts runUnit): a unit's backend answers at most `cap` raw
// rows newest first; when it was cut, its coverage boundary is its oldest raw row, and when
// every raw row shares one millisecond that millisecond is read whole.

interface RawRow extends Row {
  match: boolean;
}

interface SimUnit {
  rows: RawRow[];
  /** Raw rows the backend answers on page i: caps[i % caps.length]; 0 stands for "limit + 1". */
  caps: number[];
}

function runUnit(unit: SimUnit, startMs: number, endMs: number, cap: number): UnitResult<RawRow> {
  const raw = unit.rows.filter((r) => r.timestamp >= startMs && r.timestamp <= endMs).sort(newerFirst);
  let fetched = raw.slice(0, cap);
  let coveredAfter = startMs - 1;
  const isExhausted = fetched.length < cap;
  if (!isExhausted && fetched.length > 0) {
    const oldest = fetched[fetched.length - 1]!.timestamp;
    coveredAfter = oldest;
    if (fetched[0]!.timestamp === oldest) {
      fetched = raw.filter((r) => r.timestamp === oldest);
      coveredAfter = oldest - 1;
    }
  }
  return { rows: fetched.filter((r) => r.match), coveredAfter };
}

const scenario = fc
  .record({
    startMs: fc.integer({ min: 1, max: 1_000 }),
    span: fc.integer({ min: 0, max: 40 }),
    limit: fc.integer({ min: 1, max: 25 }),
    units: fc.array(
      fc.record({
        // Few distinct milliseconds, so ties are everywhere; some rows fall outside the window.
        times: fc.array(fc.integer({ min: -3, max: 43 }), { maxLength: 80 }),
        // Share of rows that pass the filter: 0 (none), 1 in 10 (a narrow level filter), half, all.
        density: fc.constantFrom(0, 1, 5, 10),
        draws: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 80, maxLength: 80 }),
        caps: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })), { minLength: 1, maxLength: 4 }),
        // Hundreds of rows in one millisecond now and then.
        burst: fc.option(fc.record({ at: fc.integer({ min: 0, max: 40 }), size: fc.integer({ min: 50, max: 300 }) }), {
          freq: 4,
        }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  })
  .map(({ startMs, span, limit, units }) => ({
    startMs,
    endMs: startMs + span,
    limit,
    units: units.map((u, ui): SimUnit => {
      const times = [...u.times, ...(u.burst ? Array.from({ length: u.burst.size }, () => u.burst!.at) : [])];
      return {
        caps: u.caps,
        rows: times.map((t, i) => ({
          timestamp: startMs + t,
          eventId: `u${ui}-${String(i).padStart(4, '0')}`,
          match: (u.draws[i % u.draws.length]! + (i % 7)) % 10 < u.density,
        })),
      };
    }),
  }));

describe('paging a window with endTime = nextEndTimeMs', () => {
  it('returns every matching row exactly once, newest first; 0 only when no older rows exist (property)', () => {
    let pagesSeen = 0;
    let oversizedPages = 0;
    fc.assert(
      fc.property(scenario, ({ startMs, endMs, limit, units }) => {
        const expected = units
          .flatMap((u) => u.rows)
          .filter((r) => r.match && r.timestamp >= startMs && r.timestamp <= endMs)
          .sort(newerFirst);
        const seen: RawRow[] = [];
        let end = endMs;
        for (let page = 0; ; page++) {
          // Every page moves the end back by at least one millisecond.
          expect(page).toBeLessThanOrEqual(endMs - startMs + 1);
          const results = units.map((u) => {
            const cap = u.caps[page % u.caps.length]!;
            return runUnit(u, startMs, end, cap === 0 ? limit + 1 : cap);
          });
          const { rows, nextEndTimeMs } = cutPage(results, limit, startMs);
          pagesSeen++;
          for (const r of rows) {
            expect(r.timestamp).toBeGreaterThanOrEqual(startMs);
            expect(r.timestamp).toBeLessThanOrEqual(end);
          }
          if (rows.length > limit) {
            // Only a single millisecond, returned whole, may exceed the limit.
            oversizedPages++;
            expect(new Set(rows.map((r) => r.timestamp)).size).toBe(1);
            expect(rows).toHaveLength(expected.filter((r) => r.timestamp === rows[0]!.timestamp).length);
          }
          seen.push(...rows);
          if (nextEndTimeMs === 0) {
            // 0 claims there is nothing older: everything must have been returned by now.
            expect(ids(seen)).toEqual(ids(expected));
            break;
          }
          expect(nextEndTimeMs).toBeGreaterThanOrEqual(startMs);
          expect(nextEndTimeMs).toBeLessThan(end);
          end = nextEndTimeMs;
        }
        expect(ids(seen)).toEqual(ids(expected));
      }),
      { numRuns: 600, seed: 4242 },
    );
    expect(pagesSeen).toBeGreaterThan(600);
    expect(oversizedPages).toBeGreaterThan(0);
  });

  it('holds at the service limits: a page of MAX_LIMIT over a millisecond of many rows', () => {
    const startMs = 1_000;
    const rows: RawRow[] = [
      ...burst(1_500, 12_000, 'b').map((r) => ({ ...r, match: true })),
      ...Array.from({ length: 50 }, (_, i) => ({ timestamp: 1_600 + i, eventId: `n${i}`, match: true })),
    ];
    const unit: SimUnit = { rows, caps: [0] };
    const first = cutPage([runUnit(unit, startMs, 2_000, MAX_LIMIT + 1)], MAX_LIMIT, startMs);
    expect(first.rows).toHaveLength(50);
    expect(first.nextEndTimeMs).toBe(1_500);
    const second = cutPage([runUnit(unit, startMs, first.nextEndTimeMs, MAX_LIMIT + 1)], MAX_LIMIT, startMs);
    expect(second.rows).toHaveLength(12_000);
    expect(second.nextEndTimeMs).toBe(1_499);
  });
});

describe('parseTime', () => {
  const at = (iso: string) => Date.parse(iso);

  it.each([
    ['2024-01-15T12:00:00Z', at('2024-01-15T12:00:00.000Z')],
    ['2024-01-15T12:00:00.123Z', at('2024-01-15T12:00:00.123Z')],
    ['2024-01-15T12:00:00.123456789Z', at('2024-01-15T12:00:00.123Z')],
    ['2024-01-15T12:00:00.5Z', at('2024-01-15T12:00:00.500Z')],
    ['2024-01-15T12:00:00+02:00', at('2024-01-15T10:00:00.000Z')],
    ['2024-01-15T12:00:00+0200', at('2024-01-15T10:00:00.000Z')],
    ['2024-01-15T12:00:00-05:30', at('2024-01-15T17:30:00.000Z')],
    ['2024-01-15T12:00Z', at('2024-01-15T12:00:00.000Z')],
    // Without a zone: UTC, whatever the machine's time zone.
    ['2024-01-15T12:00:00', at('2024-01-15T12:00:00.000Z')],
    ['2024-01-15T12:00:00.250', at('2024-01-15T12:00:00.250Z')],
    ['2024-01-15T12:00', at('2024-01-15T12:00:00.000Z')],
    ['2024-01-15', at('2024-01-15T00:00:00.000Z')],
    ['2024-02-29', at('2024-02-29T00:00:00.000Z')],
    // Epoch milliseconds: number or digit string (so nextEndTimeMs can be sent back as is).
    [1705320000123, 1705320000123],
    ['1705320000123', 1705320000123],
    [0, 0],
    ['0', 0],
    [253402300799999, 253402300799999],
  ])('%j → %d', (input, expected) => {
    expect(parseTime(input, 'endTime')).toBe(expected);
  });

  it.each([
    'yesterday',
    '',
    ' 1705320000123',
    '1705320000123 ',
    '1e12',
    '-5',
    '0x10',
    '12345678901234567',
    '2024-13-01T00:00:00Z',
    '2024-00-10T00:00:00Z',
    '2024-01-32',
    '2024-02-30',
    '2023-02-29T00:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-01-15T25:00:00Z',
    '2024-01-15T12:60:00Z',
    '2024-01-15T12:00:00+02',
    '2024-01-15 12:00:00Z',
    '2024-1-5',
    '15/01/2024',
    'Mon, 15 Jan 2024 12:00:00 GMT',
    '1960-01-01T00:00:00Z',
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    253402300800000,
    8.64e15,
  ] as (string | number)[])('refuses %j with 400 naming the field', (input) => {
    let error: unknown;
    try {
      parseTime(input, 'startTime');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    expect(e.code).toBe('validation:request:invalid-body');
    expect(e.status).toBe(400);
    expect(JSON.stringify(e.details)).toContain('body.startTime');
  });
});
