/**
 * `filter`: a log query's regex evaluated in process, as Berth runs it — in the filter pool (a worker thread, rows
 * sent in batches, a CPU budget per source) — against the same evaluation on the main thread (`matches` in a loop
 * over the same rows), in the same run. Target: pool time ≤ 1.3× main-thread time (median of the runs). Rows are
 * what a log query fetches for a page (1,000 and 10,000 rows of ~100–300 characters, a few JSON); the regex is a
 * typical case-insensitive one with no required literal the database could use.
 */
import { performance } from 'node:perf_hooks';
import { matches, parseFilter } from '../src/core/filter-tree/index.js';
import { parseJsonMessage, type Level } from '../src/core/log-level.js';
import { FilterPool } from '../src/services/filter-pool/pool.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';
import { median, quantile } from './lib/stats.js';

const NAME = 'filter';
const progress = (message: string) => say(NAME, message);
const RUNS = scaled(40, 8);
const WARMUP = 5;
const TARGET = 1.3;
const FILTER = parseFilter({
  kind: 'and',
  nodes: [
    { kind: 'text', op: 'regex', value: '(timeout|refused|reset)\\s+after\\s+\\d{2,}\\s*ms' },
    { kind: 'not', node: { kind: 'level', levels: ['DEBUG'] } },
  ],
});

const WORDS = 'request upstream database cache miss hit served user order payment queue worker retry'.split(' ');
const LEVELS: Level[] = ['INFO', 'WARN', 'ERROR', 'DEBUG'];

function rows(n: number): { message: string; level: Level; logStream: string }[] {
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  return Array.from({ length: n }, (_, i) => {
    const words = Array.from(
      { length: 10 + Math.floor(random() * 30) },
      () => WORDS[Math.floor(random() * WORDS.length)],
    );
    const tail = random() < 0.1 ? ` connection Timeout after ${Math.floor(random() * 900)} ms` : '';
    const message =
      i % 10 === 0
        ? JSON.stringify({ level: 'info', msg: words.join(' ') + tail, n: i })
        : `${LEVELS[i % 4]} ${words.join(' ')}${tail}`;
    return { message, level: LEVELS[i % 4]!, logStream: `web/${i % 7}` };
  });
}

function onMainThread(input: ReturnType<typeof rows>): number {
  let kept = 0;
  for (const row of input) if (matches(FILTER, { ...row, json: parseJsonMessage(row.message) })) kept += 1;
  return kept;
}

const pool = new FilterPool({ workers: 1, cpuBudgetMs: 60_000 });
const out: BenchRow[] = [];
try {
  for (const n of [1_000, 10_000]) {
    const input = rows(n);
    const expected = onMainThread(input);
    const viaPool = async () => (await pool.start({ kind: 'tree', filter: FILTER }).select(input)).length;
    if ((await viaPool()) !== expected) throw new Error('the pool and the main thread disagree');
    for (let i = 0; i < WARMUP; i++) {
      onMainThread(input);
      await viaPool();
    }
    const samples = { pool: [] as number[], main: [] as number[] };
    for (let i = 0; i < RUNS; i++) {
      let t0 = performance.now();
      await viaPool();
      samples.pool.push(performance.now() - t0);
      t0 = performance.now();
      onMainThread(input);
      samples.main.push(performance.now() - t0);
    }
    const berth = { median: median(samples.pool), p99: quantile(samples.pool, 0.99) };
    const main = { median: median(samples.main), p99: quantile(samples.main, 0.99) };
    const ratio = berth.median / main.median;
    progress(
      `${n.toLocaleString('en')} rows (${expected} kept): pool ${berth.median.toFixed(2)} ms, main thread ${main.median.toFixed(2)} ms, ${ratio.toFixed(2)}×`,
    );
    out.push({
      label: `regex + level over ${n.toLocaleString('en')} rows in the filter pool`,
      database: null,
      unit: 'ms',
      value: berth.median,
      median: berth.median,
      p99: berth.p99,
      baseline: { label: 'the same evaluation on the main thread', value: main.median, ...main },
      ratio,
      target: `≤ ${TARGET}`,
      met: ratio <= TARGET,
      notes: `ratio = pool time / main-thread time; median of ${RUNS} alternating runs after ${WARMUP} warm-up runs; FILTER_WORKERS=1`,
    });
  }
} finally {
  await pool.close();
}
writeResult({ name: NAME, rows: out });
