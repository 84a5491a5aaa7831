import type { BenchResult, Figure } from './runner-result.js';

/** Three significant figures, grouped: 23,400 / 651 / 4.27 / 0.0312. */
export function num(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function latency(f: Figure): string {
  if (f.median === undefined && f.p99 === undefined) return '';
  return `${f.median === undefined ? '–' : num(f.median)}/${f.p99 === undefined ? '–' : num(f.p99)}`;
}

const HEADER = [
  'benchmark',
  'row',
  'db',
  'value',
  'unit',
  'baseline',
  'baseline value',
  'ratio',
  'target',
  'met',
  'p50/p99 ms',
  'baseline p50/p99 ms',
];

/** One plain-text table of every row: Berth's figure, its baseline, the ratio and whether it meets its target. */
export function formatTable(results: BenchResult[]): string {
  const lines: string[][] = [HEADER];
  for (const result of results) {
    for (const row of result.rows) {
      lines.push([
        result.name,
        row.label,
        row.database ?? '',
        num(row.value),
        row.unit,
        row.baseline.label,
        num(row.baseline.value),
        num(row.ratio),
        row.target,
        row.met === null ? '–' : row.met ? 'yes' : 'NO',
        latency(row),
        latency(row.baseline),
      ]);
    }
  }
  const widths = HEADER.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)));
  const numeric = new Set([3, 6, 7]);
  const render = (l: string[]) =>
    l
      .map((cell, c) => (numeric.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [render(lines[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.slice(1).map(render)].join('\n');
}
