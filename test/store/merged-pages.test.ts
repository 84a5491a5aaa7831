// Reads that keep every row (no filter, or the level their lanes are on; a history with no tail) are merged keyset
// pages: one ordered index scan per lane under a Merge Append, stopped by the limit, nothing sorted. Run on PGlite and
// PostgreSQL. (That their rows are the one-statement reads' rows is the property of sliced-reads.test.ts.)
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/db.js';
import { insertLocalEvents } from '../../src/store/log-ingest/events.js';
import {
  mergedPage,
  mergedPageFits,
  readEveryRowInSlices,
  type Lane,
  type MergedScan,
} from '../../src/store/repositories/log-event-slices.js';
import { SliceSizer, type SliceReport } from '../../src/store/slices.js';
import { openSeededStore } from '../support/seeded-store.js';
import { baseWorld, mergeWorld, ORG_A } from '../support/world.js';

const ACCOUNT = 'acc-merged';
const REGION = 'us-east-1';
const T = Date.UTC(2024, 0, 15, 12, 0, 0);
const GROUPS = ['/m/a', '/m/b', '/m/c'];
const PER_GROUP = 3_000;
const every = { all: true, prefixes: [], names: [] };
const COLUMNS = ['timestamp', 'event_id', 'log_group', 'message'] as const;

interface Row {
  timestamp: number;
  event_id: string;
  log_group: string;
  message: string;
}

const scan = (lanes: Lane[], order: 'newest' | 'oldest' = 'newest'): MergedScan => ({
  accountId: ACCOUNT,
  region: REGION,
  lanes,
  window: { startMs: T, endMs: T + PER_GROUP * 10 },
  order,
  columns: COLUMNS,
});

let store: Store;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ store, close } = await openSeededStore(
    mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: ACCOUNT, organizationId: ORG_A, provider: 'local', region: REGION }],
    }),
  ));
  const events = GROUPS.flatMap((group, g) =>
    Array.from({ length: PER_GROUP }, (_, i) => ({
      cloudAccountId: ACCOUNT,
      region: REGION,
      logGroup: group,
      logStream: 'web',
      // Groups interleave in time, with ties between them broken by the event id.
      timestamp: T + i * 10 + (g % 2) * 5,
      message: `${i % 10 === 0 ? 'ERROR' : 'INFO'} row ${i} of ${group}`,
      eventId: `${String(i).padStart(6, '0')}-${g}`,
    })),
  );
  await insertLocalEvents(store.db, events);
  await sql`analyze log_events`.execute(store.db);
}, 120_000);

afterAll(async () => {
  await close?.();
});

const run = async (query: CompiledQuery<Row>): Promise<Row[]> => (await store.db.executeQuery(query)).rows;

describe('merged keyset pages', () => {
  it('are a Merge Append of ordered index scans: nothing sorted, the limit stops every lane early', async () => {
    const page = mergedPage<Row>(
      scan(GROUPS.map((group) => ({ group, streams: every }))),
      { ts: T + 2_000 * 10, id: '' },
      100,
    );
    const plan = await store.db.executeQuery<{ 'QUERY PLAN': string }>({
      ...page,
      sql: `explain (analyze, costs off, timing off, summary off) ${page.sql}`,
    });
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('Merge Append');
    // No Sort node (the Merge Append's own "Sort Key" line only names its order).
    expect(text).not.toMatch(/->\s+Sort\b/);
    expect(text).toMatch(/Index (Only )?Scan/);
    // No lane read far past the page: 100 rows in all, plus at most one a lane.
    const counts = [...text.matchAll(/Index (?:Only )?Scan.*actual rows=(\d+)/g)].map((m) => Number(m[1]));
    expect(counts).toHaveLength(3);
    expect(counts.reduce((s, n) => s + n, 0)).toBeLessThanOrEqual(100 + 3);
  });

  it('read in slices, return every row of the window in order, each slice within its budget', async () => {
    for (const order of ['newest', 'oldest'] as const) {
      const reports: SliceReport[] = [];
      const rows = await readEveryRowInSlices<Row>(
        run,
        scan(
          GROUPS.map((group) => ({ group, streams: every })),
          order,
        ),
        { limit: 5_000 },
        new SliceSizer({ sliceMs: 50, initialRows: 700, maxRows: 1_000, onSlice: (r) => reports.push(r) }),
      );
      expect(rows).toHaveLength(5_000);
      const key = (r: Row) => [Number(r.timestamp), r.event_id] as const;
      for (let i = 1; i < rows.length; i++) {
        const [a, b] = [key(rows[i - 1]!), key(rows[i]!)];
        const before = a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
        expect(before).toBe(order === 'oldest');
      }
      expect(new Set(rows.map((r) => `${r.log_group}|${r.event_id}`)).size).toBe(5_000);
      expect(reports.length).toBeGreaterThanOrEqual(5);
      for (const r of reports) expect(r.scanned).toBeLessThanOrEqual(r.budget);
    }
  });

  it('read as arrays (the store run with rows as arrays), return the same rows, positioned by the caller', async () => {
    const lanes = GROUPS.map((group) => ({ group, streams: every }));
    const sizing = () => new SliceSizer({ sliceMs: 50, initialRows: 700, maxRows: 1_000 });
    const objects = await readEveryRowInSlices<Row>(run, scan(lanes), { limit: 2_500 }, sizing());
    type Tuple = [number, string, string, string];
    const arrays = await readEveryRowInSlices<Tuple>(
      (q) => store.run(q, new AbortController().signal, { arrays: true }),
      scan(lanes),
      { limit: 2_500, keyOf: (r) => ({ ts: r[0], id: r[1] }) },
      sizing(),
    );
    expect(arrays.every((r) => Array.isArray(r) && typeof r[0] === 'number')).toBe(true);
    expect(
      arrays.map(([timestamp, event_id, log_group, message]) => ({ timestamp, event_id, log_group, message })),
    ).toEqual(objects);
  });

  it('read the lanes of one level on that level only', async () => {
    const rows = await readEveryRowInSlices<Row>(
      run,
      scan(GROUPS.map((group) => ({ group, level: 'ERROR', streams: every }))),
      { limit: 10_000 },
      new SliceSizer({ sliceMs: 50 }),
    );
    expect(rows).toHaveLength((PER_GROUP / 10) * GROUPS.length);
    expect(rows.every((r) => r.message.startsWith('ERROR'))).toBe(true);
  });

  it('share their parameters by position: 300 lanes carry about 300 parameters', () => {
    const lanes = Array.from({ length: 300 }, (_, i) => ({ group: `/g/${i}`, streams: every }));
    const page = mergedPage(scan(lanes), { ts: T, id: 'x' }, 10);
    expect(page.parameters).toHaveLength(7 + 300);
    expect(mergedPageFits(scan(lanes), { maxParams: 2_000, maxBytes: 256 * 1024 })).toBe(true);
    expect(mergedPageFits(scan(lanes), { maxParams: 64, maxBytes: 256 * 1024 })).toBe(false);
  });

  it('refuse a lane of some streams only (its rows are not all kept)', () => {
    const some = { all: false, prefixes: ['web'], names: [] };
    expect(() => mergedPage(scan([{ group: '/m/a', streams: some }]), undefined, 10)).toThrow(/some streams/);
  });
});
