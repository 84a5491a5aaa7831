/**
 * `merge`: the newest 1,000 rows of 50 lists of 10,000 rows each sorted newest first — what one
 * log query page needs from 50 sources — cut by Berth's page code (`cutPage`: a k-way heap merge
 * that stops at the page) against concatenating and sorting everything. In process, warmed up,
 * the two interleaved; median and p99 of the runs. Target: Berth ≥ 3× faster.
 */
import { performance } from 'node:perf_hooks';
import type { BackendRow } from '../src/core/log-query/types.js';
import { newerFirst } from '../src/core/log-query/merge.js';
import { cutPage, type UnitResult } from '../src/core/log-query/page.js';
import { atLeast, progress, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';
import { median, quantile } from './lib/stats.js';

const NAME = 'merge';
const LISTS = 50;
const ROWS = 10_000;
const PAGE = 1_000;
const RUNS = scaled(30, 5);
const WARMUP = 5;
const END = Date.UTC(2026, 0, 2);
const START = END - 86_400_000;

/** A deterministic generator, so every run sorts the same data. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Rows as a backend returns them, newest first. Timestamps are drawn from the whole day, so the
 * lists interleave, and in whole seconds for one list in five, so many rows share a millisecond.
 */
function lists(): BackendRow[][] {
  const next = random(10);
  return Array.from({ length: LISTS }, (_, l) => {
    const coarse = l % 5 === 0;
    const times = Array.from({ length: ROWS }, () => {
      const t = START + Math.floor(next() * (END - START));
      return coarse ? t - (t % 1000) : t;
    });
    const rows: BackendRow[] = times.map((timestamp, i) => ({
      timestamp,
      eventId: `${String(timestamp).padStart(16, '0')}${String(l * ROWS + i).padStart(12, '0')}`,
      message: `INFO handled request ${i} in ${i % 900}ms`,
      logGroup: `/bench/svc-${l}`,
      logStream: `task-${i % 3}`,
      level: 'INFO',
    }));
    return rows.sort(newerFirst);
  });
}

function berthPage(data: BackendRow[][]): BackendRow[] {
  const units: UnitResult<BackendRow>[] = data.map((rows) => ({ rows, coveredAfter: START - 1 }));
  return cutPage(units, PAGE, START).rows;
}

function concatenateAndSort(data: BackendRow[][]): BackendRow[] {
  return data.flat().sort(newerFirst).slice(0, PAGE);
}

const data = lists();
// Both give the newest rows in the same order; the page may stop short of a millisecond it would split.
const a = berthPage(data);
const b = concatenateAndSort(data);
if (a.length === 0 || a.some((row, i) => row !== b[i])) throw new Error('cutPage and sort disagree on the newest rows');

const samples = { berth: [] as number[], sort: [] as number[] };
const time = (fn: () => unknown) => {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};
for (let i = 0; i < WARMUP; i++) {
  berthPage(data);
  concatenateAndSort(data);
}
for (let i = 0; i < RUNS; i++) {
  samples.berth.push(time(() => berthPage(data)));
  samples.sort.push(time(() => concatenateAndSort(data)));
}
const berth = { median: median(samples.berth), p99: quantile(samples.berth, 0.99) };
const sort = { median: median(samples.sort), p99: quantile(samples.sort, 0.99) };
progress(
  NAME,
  `${RUNS} runs: cutPage ${berth.median.toFixed(2)} ms, concatenate and sort ${sort.median.toFixed(2)} ms`,
);

writeResult({
  name: NAME,
  rows: [
    atLeast(
      {
        label: `newest ${PAGE.toLocaleString('en')} of ${LISTS} sorted lists × ${ROWS.toLocaleString('en')} rows (cutPage)`,
        database: null,
        unit: 'ms',
        value: berth.median,
        median: berth.median,
        p99: berth.p99,
        baseline: { label: 'concatenate and sort', value: sort.median, median: sort.median, p99: sort.p99 },
        notes: `ratio = baseline time / Berth time (× faster); median of ${RUNS} runs after ${WARMUP} warm-up runs`,
      },
      3,
      sort.median / berth.median,
    ),
  ],
});
