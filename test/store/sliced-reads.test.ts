// Heavy reads of the local log store in slices (issue 11, build item 1): the log query of a unit, its histogram
// (issue 13) and the history of a log stream read the same rows, in the same order, as the one statement each ran before, with no statement
// scanning more than a slice's budget: no statement holds the database much longer than DB_SLICE_MS, other
// statements run between slices, and an abort stops the read at the next slice. Run on PGlite and PostgreSQL.
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFilter, planFilter, sqlCapabilities, type FilterNode } from '../../src/core/filter-tree/index.js';
import { bucketLayout, bucketOf } from '../../src/core/log-query/histogram.js';
import type { CloudAccount, LogTarget, StreamSelector } from '../../src/core/log-query/types.js';
import { LocalStreamSource, type LocalCursor } from '../../src/providers/local/log-stream/source.js';
import { predicateFilter, type StreamQuery } from '../../src/providers/log-stream/port.js';
import type { Store } from '../../src/store/db.js';
import { laneSliceQuery } from '../../src/store/repositories/log-event-slices.js';
import { countLogEventsSliced } from '../../src/store/log-query/histogram-events.js';
import { insertLocalEvents } from '../../src/store/log-ingest/events.js';
import {
  impliedLevels,
  logQueryStatement,
  queryLanes,
  queryLogEvents,
  rowCostMicros,
  queryLogEventsSliced,
  type LogQueryEventsRequest,
} from '../../src/store/log-query/events.js';
import {
  readHistoryBatch,
  readHistorySliced,
  type HistoryBatchRequest,
  type TailPosition,
} from '../../src/store/log-stream/events.js';
import { shareBudget, SliceSizer, type SliceReport, type SliceSizing } from '../../src/store/slices.js';
import type { StatementRunner } from '../../src/store/statement-runner.js';
import { onPostgres } from '../support/database.js';
import { openSeededStore } from '../support/seeded-store.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';
import { baseWorld, mergeWorld, ORG_A } from '../support/world.js';

const T = Date.UTC(2024, 0, 15, 12, 0, 0);
const REGION = 'us-east-1';
const ACCOUNT: CloudAccount = {
  id: 'acc-slices',
  organizationId: ORG_A,
  provider: 'local',
  region: REGION,
  roleArn: null,
  externalId: null,
  endpoint: null,
};
const BOUNDS = { maxParams: 2_000, maxBytes: 256 * 1024 };
const PROPERTY_TIMEOUT_MS = 240_000;

// ---------------------------------------------------------------------------------------------
// Small groups for the equivalence properties: ties everywhere, several streams, every level, ids whose order is
// not the insertion order. Written in several transactions, so that tail positions can cut through them.

const GROUPS = ['/s/a', '/s/b', '/s/c'];
const STREAMS = ['web/1', 'web/2', 'web', 'worker/a', 'w'];
const LEADS = ['', 'INFO ', 'ERROR ', '[warn] ', 'debug: ', 'FATAL ', 'trace '];
const WORDS = ['error', 'disk', 'full', 'timeout', 'K', 'é', 'x.y', ' ', '-'];
const SPAN = 40;

const rowArb = fc.record({
  offset: fc.oneof(fc.integer({ min: 0, max: SPAN }), fc.constantFrom(5, 5, 5, 20, 20)),
  stream: fc.constantFrom(...STREAMS),
  lead: fc.constantFrom(...LEADS),
  words: fc.array(fc.constantFrom(...WORDS), { maxLength: 4 }),
  json: fc.option(fc.record({ a: fc.constantFrom(1, 2, 'x'), level: fc.constantFrom('error', 'info') }), {
    nil: undefined,
  }),
  id: fc.string({ minLength: 1, maxLength: 6, unit: fc.constantFrom('a', 'b', 'Z', '0', '9', '-', '_') }),
});

const { treeArb } = filterArbitraries({
  words: WORDS,
  fragments: ['rror', 'isk f', '"a":', 'INFO'],
  strings: ['x', 'error', 'info'],
  numbers: [1, 2, 0],
  fieldPaths: ['a', 'level', 'b'],
  streams: [...STREAMS, 'web/', 'wor', ''],
  regex: {
    source: fc.constantFrom('e.r', 'di?sk', '^INFO', 'x\\.y$', '[a-e]+'),
    nonSubset: ['\\bdisk\\b'],
    sourceWeight: 4,
  },
});
/** Trees, no filter (a group without one reads keyset pages), and trees under a level leaf (a lane per level). */
const filterArb: fc.Arbitrary<FilterNode> = fc.oneof(
  treeArb,
  fc.constant<FilterNode>({ kind: 'all' }),
  fc
    .tuple(fc.subarray(['ERROR', 'INFO', 'WARN', 'FATAL', 'DEBUG'] as const, { minLength: 1, maxLength: 3 }), treeArb)
    .map(([levels, tree]): FilterNode => ({ kind: 'and', nodes: [{ kind: 'level', levels: [...levels] }, tree] })),
);
const selectorArb: fc.Arbitrary<StreamSelector> = fc.oneof(
  fc.constant({ kind: 'all' as const }),
  fc.constantFrom('web', 'web/', 'w', 'x').map((prefix) => ({ kind: 'prefix' as const, prefix })),
  fc.subarray(STREAMS).map((names) => ({ kind: 'names' as const, names })),
);
/** Slices of a few rows: a read of these groups takes many of them, and lanes stop at different places. */
const sizingArb = fc
  .record({ initialRows: fc.integer({ min: 1, max: 30 }), maxRows: fc.integer({ min: 1, max: 60 }) })
  .map((s): SliceSizing => ({ sliceMs: 1_000, initialRows: s.initialRows, maxRows: Math.max(s.maxRows, 1) }));

// ---------------------------------------------------------------------------------------------
// One big group for the heavy reads: long messages, one in ten an ERROR, none FATAL, none matching `zzqq`.

const BIG = '/big';
const BIG_EVENTS = 100_000;

let closeStore: (() => Promise<void>) | undefined;
let store: Store;
/** `(xid, seq)` of every small-group row, for tail positions. */
let keys: { xid: string; seq: number }[] = [];

beforeAll(async () => {
  ({ store, close: closeStore } = await openSeededStore(
    mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: ACCOUNT.id, organizationId: ORG_A, provider: 'local', region: REGION }],
    }),
  ));
  const rows = fc.sample(fc.array(rowArb, { minLength: 360, maxLength: 360 }), { numRuns: 1, seed: 11 })[0]!;
  const seen = new Set<string>();
  const events = rows.flatMap((r, i) => {
    const group = GROUPS[i % GROUPS.length]!;
    // Unique across groups too: rows of two groups with equal keys have no order, in either read.
    const eventId = `${r.id}${i % 7}${group.slice(-1)}`;
    if (seen.has(`${group}|${eventId}`)) return [];
    seen.add(`${group}|${eventId}`);
    const text = r.lead + r.words.join(' ');
    const message = r.json === undefined ? text : JSON.stringify({ ...r.json, msg: text });
    return [
      {
        cloudAccountId: ACCOUNT.id,
        region: REGION,
        logGroup: group,
        logStream: r.stream,
        timestamp: T + r.offset,
        message,
        eventId,
      },
    ];
  });
  for (let i = 0; i < events.length; i += 90) await insertLocalEvents(store.db, events.slice(i, i + 90));
  const r = await sql<{ xid: string; seq: number }>`select xid::text as xid, seq from log_events order by seq`.execute(
    store.db,
  );
  keys = r.rows.map((k) => ({ xid: k.xid, seq: Number(k.seq) }));

  await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time,
      event_id, message, level, json)
    select ${ACCOUNT.id}, ${REGION}, ${BIG}, 'task-' || (i % 3), ${T}::bigint + i * 10, ${T}::bigint + i * 10,
      lpad(i::text, 12, '0'), lvl || ' handled request ' || i || ' in ' || (i % 900) || 'ms '
        || repeat('payload-' || (i % 97) || ' ', 20), lvl, null
    from (select i, case when i % 10 = 0 then 'ERROR' else 'INFO' end as lvl
      from generate_series(1, ${BIG_EVENTS}::int) as i) as s`.execute(store.db);
  await sql`analyze log_events`.execute(store.db);
}, 300_000);

afterAll(async () => {
  await closeStore?.();
});

const target = (logGroup: string, streams: StreamSelector): LogTarget => ({
  account: ACCOUNT,
  region: REGION,
  logGroup,
  streams,
  sourceId: 's',
  logSourceId: logGroup,
});
const pushed = (filter: unknown): FilterNode => planFilter(parseFilter(filter), sqlCapabilities).pushed;
const ids = (rows: { logGroup?: string; log_group?: string; eventId?: string; event_id?: string }[]) =>
  rows.map((r) => `${r.logGroup ?? r.log_group ?? ''}|${r.eventId ?? r.event_id}`);
const never = new AbortController().signal;

/**
 * Slices held the database about `sliceMs` each by its own clock, where one statement (`oneMs`) held it for the
 * whole read: nine in ten within 3×, all but one within 6× and within half the one statement (a loaded two-core
 * machine deschedules a statement now and then: seen at 1.1 s for a slice of 6 ms).
 */
// Bounds leave room for a machine busy with other test files (two run at once in `npm test`): a statement's own
// clock counts the time its thread was not scheduled.
function expectSliced(reports: SliceReport[], sliceMs: number, oneMs: number): void {
  expect(reports.length).toBeGreaterThan(3);
  const ms = reports.map((s) => s.ms).sort((a, b) => a - b);
  expect(ms[Math.floor(ms.length * 0.9)]!).toBeLessThanOrEqual(5 * sliceMs);
  expect(ms[ms.length - 2]!).toBeLessThanOrEqual(Math.min(10 * sliceMs, oneMs / 2));
}

/**
 * The slices scanned the 100,000 events once: every slice but the last used its budget (the last one reached the
 * end of the window: only its kept rows' positions are known, none here).
 */
function expectWholeWindow(reports: SliceReport[]): void {
  const full = reports.slice(0, -1).reduce((n, s) => n + s.scanned, 0);
  const last = reports[reports.length - 1]!;
  expect(reports.slice(0, -1).every((s) => s.scanned === s.budget)).toBe(true);
  // The full slices may end exactly at the window's end (the budgets follow the measured speed): the last slice
  // then finds nothing left to scan.
  expect(full).toBeLessThanOrEqual(BIG_EVENTS);
  if (full === BIG_EVENTS) expect(last.scanned).toBe(0);
  expect(full + last.budget).toBeGreaterThanOrEqual(BIG_EVENTS);
}

/** The store's runner, timing every statement (wall clock) into `into`. */
function timedRunner(into: number[]): StatementRunner {
  return async (query, signal, options) => {
    const started = performance.now();
    try {
      return await store.run(query, signal, options);
    } finally {
      into.push(performance.now() - started);
    }
  };
}

describe('the log query read in slices', () => {
  it(
    'returns the rows of the one-statement read, in its order, for random filters, sources, windows and slice sizes',
    async () => {
      let multiSlice = 0;
      let nonEmpty = 0;
      await fc.assert(
        fc.asyncProperty(
          filterArb,
          fc.array(fc.tuple(fc.constantFrom(...GROUPS), selectorArb), { minLength: 1, maxLength: 4 }),
          fc.integer({ min: -2, max: SPAN }),
          fc.integer({ min: 0, max: SPAN + 2 }),
          fc.integer({ min: 1, max: 150 }),
          sizingArb,
          async (filter, sources, from, span, limit, sizing) => {
            const request: LogQueryEventsRequest & { signal: AbortSignal } = {
              targets: sources.map(([group, streams]) => target(group, streams)),
              window: { startMs: T + from, endMs: T + from + span },
              filter: planFilter(filter, sqlCapabilities).pushed,
              limit,
              signal: never,
            };
            const want = await queryLogEvents(store.db, store.run, request, BOUNDS);
            const reports: SliceReport[] = [];
            const got = await queryLogEventsSliced(store.db, store.run, request, BOUNDS, {
              ...sizing,
              onSlice: (s) => reports.push(s),
            });
            expect(ids(got)).toEqual(ids(want));
            expect(got).toEqual(want);
            if (reports.length > 1) multiSlice++;
            if (want.length > 0) nonEmpty++;
          },
        ),
        { numRuns: 300, seed: 1101 },
      );
      expect(multiSlice).toBeGreaterThan(150);
      expect(nonEmpty).toBeGreaterThan(100);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('reads a filter of one level on the group-level-time index: ERROR rows only, no row at all for FATAL', async () => {
    for (const [level, expected] of [
      ['FATAL', 0],
      ['ERROR', 1_001],
    ] as const) {
      const reports: SliceReport[] = [];
      const request = {
        targets: [target(BIG, { kind: 'all' as const })],
        window: { startMs: T, endMs: T + BIG_EVENTS * 10 },
        // A level and a text leaf: lanes on the level index, the text tested on their rows.
        filter: pushed({
          kind: 'and',
          nodes: [
            { kind: 'level', levels: [level] },
            { kind: 'text', op: 'contains', value: 'handled' },
          ],
        }),
        limit: 1_001,
        signal: never,
      };
      const rows = await queryLogEventsSliced(store.db, store.run, request, BOUNDS, {
        sliceMs: 50,
        onSlice: (s) => reports.push(s),
      });
      expect(rows).toHaveLength(expected);
      expect(rows.every((r) => r.level === 'ERROR')).toBe(true);
      // The scan walked rows of that level only (one row in ten is an ERROR): about as many as it kept.
      const scanned = reports.reduce((n, s) => n + s.scanned, 0);
      if (expected === 0) expect(scanned).toBe(0);
      else expect(scanned).toBeLessThan(2 * expected);
      // …on the level index, not by walking the group and testing the level.
      const lanes = queryLanes(request.targets, request.filter);
      expect(lanes).toEqual([{ group: BIG, level, streams: { all: true, prefixes: [], names: [] } }]);
      const statement = laneSliceQuery({
        accountId: ACCOUNT.id,
        region: REGION,
        lanes,
        window: request.window,
        order: 'newest',
        keep: sql<boolean>`true`,
        columns: ['timestamp'],
        budgets: [1_000],
        limit: 1_001,
      }).compile(store.db);
      const plan = await store.db.executeQuery({ ...statement, sql: `explain ${statement.sql}` });
      expect(JSON.stringify(plan.rows)).toContain('log_events_group_level_time_idx');
    }
  });

  describe('over 100,000 events with a filter that matches nothing (the whole window is scanned)', () => {
    const SLICE_MS = 20;
    const request = (limit: number, signal = never): LogQueryEventsRequest & { signal: AbortSignal } => ({
      targets: [target(BIG, { kind: 'all' })],
      window: { startMs: T, endMs: T + BIG_EVENTS * 10 },
      filter: pushed({ kind: 'text', op: 'regex', value: 'zzqq\\d+' }),
      limit,
      signal,
    });

    it(`holds the database ~DB_SLICE_MS (${SLICE_MS} ms) per statement, where one statement held it for all`, async () => {
      const one: number[] = [];
      expect(await queryLogEvents(store.db, timedRunner(one), request(10_001), BOUNDS)).toEqual([]);

      const wall: number[] = [];
      const reports: SliceReport[] = [];
      const rows = await queryLogEventsSliced(store.db, timedRunner(wall), request(10_001), BOUNDS, {
        sliceMs: SLICE_MS,
        onSlice: (s) => reports.push(s),
      });
      expect(rows).toEqual([]);
      expectWholeWindow(reports);
      // By the database's clock (the sizer's measure), and by ours (with the round trip) for most of them.
      expectSliced(reports, SLICE_MS, one[0]!);
      const sorted = [...wall].sort((a, b) => a - b);
      expect(sorted[Math.floor(sorted.length * 0.9)]!).toBeLessThanOrEqual(Math.min(10 * SLICE_MS, one[0]! / 2));
    }, 60_000);

    it('lets a cheap statement issued meanwhile run between two slices, long before the read ends', async () => {
      let secondSlice: () => void = () => undefined;
      const started = new Promise<void>((resolve) => {
        secondSlice = resolve;
      });
      let slices = 0;
      const t0 = performance.now();
      const heavy = queryLogEventsSliced(store.db, store.run, request(10_001), BOUNDS, {
        sliceMs: SLICE_MS,
        onSlice: () => {
          if (++slices === 2) secondSlice();
        },
      }).then(() => performance.now());
      await started;
      const asked = performance.now();
      await sql`select 1`.execute(store.db);
      const answered = performance.now();
      const ended = await heavy;
      expect(answered - asked).toBeLessThan(500);
      // The read went on for most of its time after the cheap statement was answered.
      expect(ended - answered).toBeGreaterThan((ended - t0) / 2);
    }, 60_000);

    it.skipIf(onPostgres)(
      'contrast (PGlite): behind the one statement, the same cheap statement waits for all of it',
      async () => {
        const one = store.run(logQueryStatement(store.db, request(10_001), BOUNDS), never);
        await new Promise((resolve) => setTimeout(resolve, 5));
        const asked = performance.now();
        await sql`select 1`.execute(store.db);
        const waited = performance.now() - asked;
        await one;
        expect(waited).toBeGreaterThan(5 * SLICE_MS);
      },
      60_000,
    );

    it('stops between slices when the signal aborts: no statement after it', async () => {
      const controller = new AbortController();
      const statements: number[] = [];
      let slices = 0;
      const read = queryLogEventsSliced(store.db, timedRunner(statements), request(10_001, controller.signal), BOUNDS, {
        sliceMs: SLICE_MS,
        onSlice: () => {
          if (++slices === 2) controller.abort(new Error('client gone'));
        },
      });
      await expect(read).rejects.toThrow('client gone');
      expect(statements).toHaveLength(2);
    }, 60_000);
  });
});

describe('the history of a log stream read in slices', () => {
  const historyArb = fc.record({
    groups: fc.subarray(GROUPS, { minLength: 1 }),
    streams: selectorArb,
    from: fc.integer({ min: -2, max: SPAN }),
    span: fc.integer({ min: 0, max: SPAN + 2 }),
    after: fc.option(fc.nat(), { nil: undefined }),
    ceiling: fc.option(
      fc.record({ at: fc.nat(), entry: fc.option(fc.tuple(fc.nat(), fc.nat({ max: 400 })), { nil: undefined }) }),
      { nil: undefined },
    ),
    limit: fc.integer({ min: 1, max: 60 }),
  });

  it(
    'returns the rows of the one-statement batch, in its order, for random scopes, cursors, ceilings and slice sizes',
    async () => {
      const all = (
        await sql<{ timestamp: number; event_id: string }>`select timestamp, event_id from log_events
          where log_group <> ${BIG} order by seq`.execute(store.db)
      ).rows;
      let multiSlice = 0;
      let nonEmpty = 0;
      await fc.assert(
        fc.asyncProperty(historyArb, sizingArb, async (h, sizing) => {
          const at = (n: number) => keys[n % keys.length]!;
          const ceiling: TailPosition | undefined =
            h.ceiling === undefined
              ? undefined
              : {
                  xid: at(h.ceiling.at).xid,
                  seq: at(h.ceiling.at).seq,
                  inProgress: h.ceiling.entry === undefined ? [] : [[at(h.ceiling.entry[0]).xid, h.ceiling.entry[1]]],
                };
          const afterRow = h.after === undefined ? undefined : all[h.after % all.length]!;
          const request: HistoryBatchRequest = {
            scope: { accountId: ACCOUNT.id, region: REGION, logGroups: h.groups, streams: h.streams },
            window: { startMs: T + h.from, endMs: T + h.from + h.span },
            after: afterRow === undefined ? undefined : { ts: Number(afterRow.timestamp), id: afterRow.event_id },
            ceiling,
            limit: h.limit,
          };
          const want = await readHistoryBatch(store.db, request);
          const reports: SliceReport[] = [];
          const got = await readHistorySliced(
            store.db,
            request,
            new SliceSizer({ ...sizing, onSlice: (s) => reports.push(s) }),
          );
          expect(got).toEqual(want);
          if (reports.length > 1) multiSlice++;
          if (want.length > 0) nonEmpty++;
        }),
        { numRuns: 300, seed: 1102 },
      );
      expect(multiSlice).toBeGreaterThan(150);
      expect(nonEmpty).toBeGreaterThan(100);
    },
    PROPERTY_TIMEOUT_MS,
  );

  // A history statement tests the stream and the ceiling, not the message: 100,000 rows are cheaper than a
  // log query's (tens of milliseconds), so the smallest DB_SLICE_MS shows the slices. Here the most a request may
  // ask: 100 stream names (none of them the events'), and a switch point with transactions in progress when the
  // stream started (200 that wrote nothing).
  const SLICE_MS = 5;
  const names = Array.from({ length: 100 }, (_, k) => `task-${String.fromCharCode(97 + (k % 26))}${k}`.slice(0, 6));
  /** Also the ceiling of the one-statement batch: the store's statements take a cursor as their tail position. */
  let switchPoint: LocalCursor;
  beforeAll(async () => {
    const r = await sql<{ x: string }>`select max(xid)::text as x from log_events`.execute(store.db);
    const xip = Array.from({ length: 200 }, (_, k): [string, number] => [String(k + 3), 0]);
    switchPoint = { xid: String(BigInt(r.rows[0]!.x) + 1n), seq: 0, inProgress: xip };
  });
  const query = (streams: StreamQuery['streams']): StreamQuery => ({
    account: ACCOUNT,
    region: REGION,
    logGroups: [BIG],
    streams,
    pattern: '',
    filter: predicateFilter(() => true),
  });

  it('with a stream selector no row has, scans 100,000 events in statements of ~DB_SLICE_MS, not one', async () => {
    const one = performance.now();
    const batch = await readHistoryBatch(store.db, {
      scope: { accountId: ACCOUNT.id, region: REGION, logGroups: [BIG], streams: { kind: 'names', names } },
      window: { startMs: T, endMs: T + BIG_EVENTS * 10 },
      ceiling: switchPoint,
      limit: 500,
    });
    expect(batch).toEqual([]);
    const oneMs = performance.now() - one;

    const reports: SliceReport[] = [];
    const source = new LocalStreamSource(store.db, { slices: { sliceMs: SLICE_MS, onSlice: (s) => reports.push(s) } });
    const batches = [];
    for await (const b of source.history(
      query({ kind: 'names', names }),
      { startMs: T, endMs: T + BIG_EVENTS * 10 },
      undefined,
      switchPoint,
      500,
      never,
    ))
      batches.push(b);
    expect(batches).toEqual([]);
    expectWholeWindow(reports);
    // 100,000 history rows take one statement tens of milliseconds: at that scale a descheduled moment of a loaded
    // two-core machine weighs like a slice, so the median says it (and every slice stayed within its budget).
    expect(reports.length).toBeGreaterThan(5);
    expect(reports.every((r) => r.scanned <= r.budget)).toBe(true);
    const ms = reports.map((r) => r.ms).sort((a, b) => a - b);
    expect(ms[Math.floor(ms.length / 2)]!).toBeLessThanOrEqual(Math.min(5 * SLICE_MS, oneMs / 3));
  }, 60_000);

  it('ends the history between slices when the stream stops', async () => {
    const controller = new AbortController();
    let slices = 0;
    const source = new LocalStreamSource(store.db, {
      slices: {
        sliceMs: SLICE_MS,
        onSlice: () => {
          if (++slices === 2) controller.abort();
        },
      },
    });
    const batches = [];
    for await (const b of source.history(
      query({ kind: 'prefix', prefix: 'none/' }),
      { startMs: T, endMs: T + BIG_EVENTS * 10 },
      undefined,
      undefined,
      500,
      controller.signal,
    ))
      batches.push(b);
    expect(batches).toEqual([]);
    expect(slices).toBe(2);
  }, 60_000);

  it('still reads a stream whose rows exist, batch by batch, oldest first', async () => {
    const source = new LocalStreamSource(store.db, { slices: { sliceMs: SLICE_MS, initialRows: 7 } });
    const seen: string[] = [];
    for await (const b of source.history(
      query({ kind: 'names', names: ['task-1'] }),
      { startMs: T, endMs: T + 3_000 },
      undefined,
      undefined,
      50,
      never,
    ))
      seen.push(...b.map((e) => e.eventId));
    // Events 1..300 are in the window; one in three is on task-1.
    expect(seen).toEqual(
      Array.from({ length: 300 }, (_, k) => k + 1)
        .filter((i) => i % 3 === 1)
        .map((i) => String(i).padStart(12, '0')),
    );
  });
});

describe('the log histogram counted in slices', () => {
  const histogram = (
    targets: LogTarget[],
    window: { startMs: number; endMs: number },
    buckets: number,
    filter: FilterNode,
    sizing: SliceSizing,
  ) =>
    countLogEventsSliced(
      store.db,
      store.run,
      { targets, layout: bucketLayout(window, buckets), filter, signal: never },
      BOUNDS,
      sizing,
    );
  /** `bucket level` → rows, the way the histogram keys its counts. */
  const keyed = (counts: { bucket: number; level: string; n: number }[]) =>
    Object.fromEntries(counts.map((c) => [`${c.bucket} ${c.level}`, c.n]).sort(([a], [b]) => (a! < b! ? -1 : 1)));

  it(
    'counts exactly the rows the one-statement query returns, per bucket and level, for random filters, sources, windows, buckets and slice sizes',
    async () => {
      let multiSlice = 0;
      let nonEmpty = 0;
      await fc.assert(
        fc.asyncProperty(
          filterArb,
          fc.array(fc.tuple(fc.constantFrom(...GROUPS), selectorArb), { minLength: 1, maxLength: 4 }),
          fc.integer({ min: -2, max: SPAN }),
          fc.integer({ min: 0, max: SPAN + 2 }),
          fc.integer({ min: 1, max: 12 }),
          sizingArb,
          async (filter, sources, from, span, buckets, sizing) => {
            const targets = sources.map(([group, streams]) => target(group, streams));
            const window = { startMs: T + from, endMs: T + from + span };
            const sqlFilter = planFilter(filter, sqlCapabilities).pushed;
            const rows = await queryLogEvents(
              store.db,
              store.run,
              { targets, window, filter: sqlFilter, limit: 10_000, signal: never },
              BOUNDS,
            );
            const layout = bucketLayout(window, buckets);
            const want = new Map<string, number>();
            for (const r of rows) {
              const key = `${bucketOf(layout, r.timestamp)} ${r.level}`;
              want.set(key, (want.get(key) ?? 0) + 1);
            }
            const reports: SliceReport[] = [];
            const got = await histogram(targets, window, buckets, sqlFilter, {
              ...sizing,
              onSlice: (s) => reports.push(s),
            });
            expect(got.relaxed).toBe(0);
            expect(keyed(got.counts)).toEqual(
              keyed([...want].map(([k, n]) => ({ bucket: Number(k.split(' ')[0]), level: k.split(' ')[1]!, n }))),
            );
            if (reports.length > 1) multiSlice++;
            if (rows.length > 0) nonEmpty++;
          },
        ),
        { numRuns: 200, seed: 1301 },
      );
      expect(multiSlice).toBeGreaterThan(100);
      expect(nonEmpty).toBeGreaterThan(60);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('counts 100,000 events in statements of ~DB_SLICE_MS, where one statement held the database for all', async () => {
    const SLICE_MS = 20;
    const window = { startMs: T, endMs: T + BIG_EVENTS * 10 };
    const filter = pushed({ kind: 'text', op: 'contains', value: 'handled request' });
    const targets = [target(BIG, { kind: 'all' })];
    const one: SliceReport[] = [];
    const whole = await histogram(targets, window, 60, filter, {
      sliceMs: 60_000,
      initialRows: BIG_EVENTS + 1,
      maxRows: BIG_EVENTS + 1,
      onSlice: (s) => one.push(s),
    });
    expect(one).toHaveLength(1);
    const reports: SliceReport[] = [];
    const sliced = await histogram(targets, window, 60, filter, {
      sliceMs: SLICE_MS,
      onSlice: (s) => reports.push(s),
    });
    expect(keyed(sliced.counts)).toEqual(keyed(whole.counts));
    expect(sliced.counts.reduce((n, c) => n + c.n, 0)).toBe(BIG_EVENTS);
    expect(sliced.counts.filter((c) => c.level === 'ERROR').reduce((n, c) => n + c.n, 0)).toBe(BIG_EVENTS / 10);
    expectWholeWindow(reports);
    expectSliced(reports, SLICE_MS, one[0]!.ms);
  }, 60_000);

  it('stops between slices when its signal aborts', async () => {
    const controller = new AbortController();
    let slices = 0;
    const read = countLogEventsSliced(
      store.db,
      store.run,
      {
        targets: [target(BIG, { kind: 'all' })],
        layout: bucketLayout({ startMs: T, endMs: T + BIG_EVENTS * 10 }, 60),
        filter: pushed({ kind: 'text', op: 'contains', value: 'zzqq' }),
        signal: controller.signal,
      },
      BOUNDS,
      {
        sliceMs: 5,
        onSlice: () => {
          if (++slices === 2) controller.abort(new Error('client gone'));
        },
      },
    );
    await expect(read).rejects.toThrow('client gone');
    expect(slices).toBe(2);
  });
});

describe('slice sizing', () => {
  it('shrinks at once to the rate measured, grows by the ratio (16 times over at most), within its bounds', () => {
    const sizer = new SliceSizer({ sliceMs: 50, initialRows: 2_000, minRows: 1, maxRows: 100_000 });
    sizer.record({ budget: 2_000, scanned: 2_000, ms: 500 });
    expect(sizer.budget).toBe(200);
    sizer.record({ budget: 200, scanned: 200, ms: 0 });
    expect(sizer.budget).toBe(3_200);
    sizer.record({ budget: 3_200, scanned: 3_200, ms: 40 });
    expect(sizer.budget).toBe(4_000);
    // A slice that did not use its budget (the end of the window) says nothing about a larger one.
    sizer.record({ budget: 4_000, scanned: 10, ms: 1 });
    expect(sizer.budget).toBe(4_000);
    sizer.record({ budget: 4_000, scanned: 1, ms: 10_000 });
    expect(sizer.budget).toBe(1);
    for (let i = 0; i < 6; i++) sizer.record({ budget: sizer.budget, scanned: sizer.budget, ms: 0 });
    expect(sizer.budget).toBe(100_000);
  });

  it('sizes the first slice of a filter whose rows cost more smaller', async () => {
    const firstBudget = async (filter: unknown) => {
      const reports: SliceReport[] = [];
      const request = {
        targets: [target(BIG, { kind: 'all' as const })],
        window: { startMs: T, endMs: T + 1_000 },
        filter: pushed(filter),
        limit: 10_000,
        signal: never,
      };
      await queryLogEventsSliced(store.db, store.run, request, BOUNDS, {
        sliceMs: 50,
        onSlice: (s) => reports.push(s),
      });
      return reports[0]!.budget;
    };
    // 30 case-insensitive leaves of 1,024 characters: 30 long regexes in SQL (15 ms a row on PGlite).
    const wide = {
      kind: 'or',
      nodes: Array.from({ length: 30 }, (_, k) => ({
        kind: 'text',
        op: 'contains',
        value: `Never-${k}-`.padEnd(1_024, 'x'),
      })),
    };
    expect(rowCostMicros(pushed({ kind: 'all' }))).toBeLessThan(10);
    expect(rowCostMicros(pushed(wide))).toBeGreaterThan(10_000);
    expect(await firstBudget({ kind: 'all' })).toBe(2_000);
    expect(await firstBudget({ kind: 'text', op: 'contains', value: 'x' })).toBe(100);
    expect(await firstBudget(wide)).toBeLessThan(5);
  });

  it('gives every lane one row at least, the rest by weight', () => {
    expect(shareBudget(100, [1, 1, 2])).toEqual([25, 25, 50]);
    expect(shareBudget(2, [1, 1, 1, 100])).toEqual([1, 1, 1, 1]);
  });

  it('turns a filter that implies levels into those levels, and any other into none', () => {
    const levels = (f: unknown) => {
      const s = impliedLevels(parseFilter(f));
      return s === undefined ? undefined : [...s].sort();
    };
    expect(levels({ kind: 'level', levels: ['ERROR'] })).toEqual(['ERROR']);
    expect(
      levels({
        kind: 'and',
        nodes: [
          { kind: 'level', levels: ['ERROR', 'WARN'] },
          { kind: 'text', op: 'contains', value: 'x' },
          { kind: 'level', levels: ['WARN', 'INFO'] },
        ],
      }),
    ).toEqual(['WARN']);
    expect(
      levels({
        kind: 'or',
        nodes: [
          { kind: 'level', levels: ['ERROR'] },
          {
            kind: 'and',
            nodes: [
              { kind: 'level', levels: ['FATAL'] },
              { kind: 'text', op: 'contains', value: 'x' },
            ],
          },
        ],
      }),
    ).toEqual(['ERROR', 'FATAL']);
    expect(
      levels({
        kind: 'or',
        nodes: [
          { kind: 'level', levels: ['ERROR'] },
          { kind: 'text', op: 'contains', value: 'x' },
        ],
      }),
    ).toBeUndefined();
    expect(levels({ kind: 'not', node: { kind: 'level', levels: ['ERROR'] } })).toBeUndefined();
  });
});
