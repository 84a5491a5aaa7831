import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { SUMMARY_FILE, type SummaryRow } from './summary.js';

interface Recorded extends SummaryRow {
  database: string;
  node: string;
}

/** Clears the figures before the suite and prints them as one table after it (also written to .reliability/summary.md). */
export default function setup(): () => void {
  rmSync(SUMMARY_FILE, { force: true });
  return () => {
    if (!existsSync(SUMMARY_FILE)) return;
    const rows = readFileSync(SUMMARY_FILE, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Recorded);
    const line = (r: Recorded) =>
      `| ${r.area} | ${r.check} | ${r.result} | ${r.database} | ${r.node} | ${r.ok ? 'ok' : 'FELL SHORT'} |`;
    const header = ['| area | check | result | database | node | status |', '|---|---|---|---|---|---|'];
    const short = rows.filter((r) => !r.ok);
    const text = [
      '',
      '## Reliability summary',
      '',
      ...header,
      ...rows.filter((r) => r.ok).map(line),
      '',
      short.length === 0 ? 'Nothing fell short.' : '### Fell short',
      ...(short.length === 0 ? [] : [...header, ...short.map(line)]),
      '',
    ].join('\n');
    writeFileSync(SUMMARY_FILE.replace(/\.jsonl$/, '.md'), text);
    process.stdout.write(`${text}\n`);
  };
}
