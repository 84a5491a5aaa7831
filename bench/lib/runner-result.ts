import { writeFileSync } from 'node:fs';
import { formatTable } from './runner-table.js';

/**
 * What every benchmark hands the runner (`bench/run.ts`): one JSON file at `BENCH_RESULT_FILE`.
 * Each row is a figure of Berth's beside its baseline, measured in the same run.
 */
export type Unit = 'req/s' | 'ms' | 'events/s' | 'lines/s' | 'rows/s' | 'reads/interval';

export interface Figure {
  label: string;
  value: number;
  /** Latency p50 in ms, where it applies. */
  median?: number;
  /** Latency p99 in ms, where it applies. */
  p99?: number;
}

export interface BenchRow extends Figure {
  database: 'pglite' | 'postgres' | null;
  unit: Unit;
  baseline: Figure;
  /** value / baseline.value, or as the target defines it (the target text says which). */
  ratio: number;
  /** The target as text, e.g. `≥ 0.8`; `reported` where the issue only asks for the figure. */
  target: string;
  /** null where the target says "reported", or the row could not be measured. */
  met: boolean | null;
  notes?: string;
}

export interface BenchResult {
  name: string;
  rows: BenchRow[];
  /** Rows that could not run (no PostgreSQL, a failure), with why. */
  skipped?: string[];
}

/** A row whose target is a lower bound on `ratio`. */
export function atLeast(
  row: Omit<BenchRow, 'ratio' | 'target' | 'met'>,
  min: number,
  ratio = row.value / row.baseline.value,
): BenchRow {
  return { ...row, ratio, target: `≥ ${min}`, met: Number.isFinite(ratio) ? ratio >= min : null };
}

/** A row the issue only asks to report. */
export function reported(row: Omit<BenchRow, 'ratio' | 'target' | 'met'>): BenchRow {
  return { ...row, ratio: row.value / row.baseline.value, target: 'reported', met: null };
}

/**
 * Writes the result where the runner asked for it; run alone (`npx tsx bench/<name>.ts`), prints
 * the table instead.
 */
export function writeResult(result: BenchResult): void {
  const file = process.env.BENCH_RESULT_FILE;
  if (file !== undefined && file !== '') writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  else {
    console.log(formatTable([result]));
    for (const s of result.skipped ?? []) console.log(`skipped: ${s}`);
  }
}

/** Progress on stderr, so a benchmark's own output never mixes with a result. */
export function progress(name: string, message: string): void {
  process.stderr.write(`[${name}] ${message}\n`);
}
