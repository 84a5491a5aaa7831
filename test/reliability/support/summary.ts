import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../../support/process.js';

/** Where the reliability tests write their figures; the global setup clears it and prints it as a table. */
export const SUMMARY_FILE = join(ROOT, '.reliability', 'summary.jsonl');

/** Full runs (`npm run test:reliability`) use the sizes; inside `npm test` a fast subset runs. */
export const FULL = process.env.BERTH_RELIABILITY === 'full';

/** Parts of the full suite a run may leave out (RELIABILITY_SKIP=load,kill9,sigterm); plain `npm test` never runs them. */
export function skipped(part: 'load' | 'kill9' | 'sigterm'): boolean {
  return (process.env.RELIABILITY_SKIP ?? '')
    .split(',')
    .map((s) => s.trim())
    .includes(part);
}

export interface SummaryRow {
  /** fuzzing, faults, load, isolation */
  area: string;
  /** What was checked, e.g. "requests fuzzed" or "PostgreSQL cut mid-request". */
  check: string;
  /** The figure, e.g. "10,000" or "p99 42 ms". */
  result: string;
  /** false: the check fell short (the test fails too); the table lists it apart. */
  ok: boolean;
}

/** Adds a line to the summary table the suite prints at its end. */
export function recordSummary(row: SummaryRow): void {
  mkdirSync(dirname(SUMMARY_FILE), { recursive: true });
  appendFileSync(
    SUMMARY_FILE,
    `${JSON.stringify({ ...row, database: process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite', node: process.version })}\n`,
  );
}
