import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { compileFilterPattern } from '../../src/core/filter-pattern/index.js';
import { foldClass } from '../../src/core/filter-tree/case-fold.js';
import { matches, parseFilter } from '../../src/core/filter-tree/index.js';
import { FilterBudgetError, FilterPool } from '../../src/services/filter-pool/pool.js';

/** `a`/`b` text with a `c` every 997 characters: a regex like `a[ab]{998}c` keeps every thread of its program alive. */
function abText(length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += i % 997 === 996 ? 'c' : (i * 7919) % 13 < 6 ? 'a' : 'b';
  return s;
}

const pool = new FilterPool({ workers: 1, cpuBudgetMs: 10_000, batchRows: 50 });
/** A small budget, and batches of two messages, to see runs stopped. */
const tight = new FilterPool({ workers: 1, cpuBudgetMs: 300, batchRows: 2 });
afterAll(() => Promise.all([pool.close(), tight.close()]));
/** Never matches `abText`: between two `c`s there are 996 characters. */
const COSTLY = '(?:a[ab]{998}c)|(?:b[ab]{998}c)';

describe('filter pool', () => {
  // First in the file: nothing before it has folded a non-ASCII character in this process.
  it('warm() builds the case-folding classes, so that no request builds them on the event loop', async () => {
    const fresh = new FilterPool({ workers: 1, cpuBudgetMs: 1_000 });
    try {
      await fresh.warm();
      const started = performance.now();
      // K, k and the Kelvin sign: building the classes takes a tenth of a second or more; reading them, microseconds
      // (the bound leaves room for a pause of a busy two-core host, still well under a build).
      expect(foldClass(0x212a)).toEqual([0x4b, 0x6b, 0x212a]);
      expect(performance.now() - started).toBeLessThan(50);
    } finally {
      await fresh.close();
    }
  });

  it('keeps exactly the rows the filter tree keeps, across batches', async () => {
    const filter = parseFilter({
      kind: 'or',
      nodes: [
        { kind: 'text', op: 'regex', value: 'time(out|d)\\s+\\d+' },
        {
          kind: 'and',
          nodes: [
            { kind: 'level', levels: ['ERROR'] },
            { kind: 'field', path: 'code', op: 'gte', value: 500 },
          ],
        },
      ],
    });
    const rows = Array.from({ length: 237 }, (_, i) => ({
      message: i % 3 === 0 ? `request timeout ${i}` : i % 5 === 0 ? JSON.stringify({ code: 400 + i }) : `ok ${i}`,
      level: (i % 2 === 0 ? 'ERROR' : 'INFO') as 'ERROR' | 'INFO',
      logStream: `s-${i % 4}`,
    }));
    const expected = rows.filter((r) =>
      matches(filter, { ...r, json: r.message.startsWith('{') ? JSON.parse(r.message) : undefined }),
    );
    expect(expected.length).toBeGreaterThan(50);
    expect(await pool.start({ kind: 'tree', filter }).select(rows)).toEqual(expected);
  });

  it('keeps exactly the messages a filter pattern keeps', async () => {
    const pattern = '{ $.status >= 500 } ';
    const messages = ['{"status":503}', '{"status":200}', 'plain', '{"status":"500"}', '{"status":500.5}'];
    const keep = compileFilterPattern(pattern);
    const got = await pool.start({ kind: 'pattern', pattern }).select(messages.map((message) => ({ message })));
    expect(got.map((r) => r.message)).toEqual(messages.filter(keep));
  });

  it('refuses at once a message whose worst case exceeds the budget, without running it', async () => {
    const filter = parseFilter({ kind: 'text', op: 'regex', value: COSTLY });
    const { stopped, refused } = tight.stats;
    const started = performance.now();
    const run = tight.start({ kind: 'tree', filter });
    const error = await run.keep([{ message: 'ab' }, { message: abText(250_000) }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FilterBudgetError);
    expect((error as FilterBudgetError).predicted).toBe(true);
    // Refused before running: predicted, and no run stopped (stats below). The clock only catches a hang: on a
    // loaded two-core machine sending the 250 KB message to the thread alone took 270 ms once.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(tight.stats.refused).toBe(refused + 1);
    expect(tight.stats.stopped).toBe(stopped);
  });

  it('stops a batch past its budget without holding the event loop, and serves the next run', async () => {
    const filter = parseFilter({ kind: 'text', op: 'regex', value: COSTLY });
    // A thread is ready before the clock starts.
    await tight
      .start({ kind: 'tree', filter: parseFilter({ kind: 'text', op: 'contains', value: 'x' }) })
      .keep([{ message: 'x' }]);
    const { stopped } = tight.stats;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();
    const run = tight.start({ kind: 'tree', filter });
    // Each message's worst case (2,003 instructions × 6,000 characters) fits the budget; the batch of two does not.
    const message = abText(6_000);
    const error = await run.keep([{ message }, { message }]).catch((e: unknown) => e);
    const took = performance.now() - started;
    delay.disable();
    expect(error).toBeInstanceOf(FilterBudgetError);
    expect((error as FilterBudgetError).predicted).toBe(false);
    // The budget is 300 ms of the worker's time; the main thread kept turning meanwhile.
    expect(took).toBeGreaterThanOrEqual(280);
    expect(took).toBeLessThan(3_000);
    expect(delay.max / 1e6).toBeLessThan(150);
    expect(tight.stats.stopped).toBe(stopped + 1);
    // The terminated thread was replaced.
    const cheap = parseFilter({ kind: 'text', op: 'regex', value: 'b+' });
    expect(await tight.start({ kind: 'tree', filter: cheap }).keep([{ message: 'abc' }, { message: 'xyz' }])).toEqual(
      new Uint8Array([1, 0]),
    );
  });

  it('counts the budget over a run: many cheap batches end it too', async () => {
    const filter = parseFilter({ kind: 'text', op: 'regex', value: COSTLY });
    // ~0.3–1.5 ms a message: each batch of two ends well within the budget, the run does not.
    const message = abText(1_500);
    // Warm the thread (it may be new): its first batches are slower than the rest.
    await tight.start({ kind: 'tree', filter }, 10_000).keep([{ message }, { message }]);
    const run = tight.start({ kind: 'tree', filter });
    const batches = tight.stats.batches;
    await expect(run.keep(Array.from({ length: 10_000 }, () => ({ message })))).rejects.toBeInstanceOf(
      FilterBudgetError,
    );
    expect(tight.stats.batches - batches).toBeGreaterThanOrEqual(10);
    expect(run.remainingMs).toBeLessThan(300);
  });
});
