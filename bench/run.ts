/**
 * `npm run bench` runs every benchmark; `npm run bench -- NAME…` the named ones. Each benchmark is
 * `bench/<name>.ts`, run in its own process; it seeds its own data and writes its rows (Berth's
 * figure, a baseline measured in the same run, the ratio and the target) to `BENCH_RESULT_FILE`.
 * The runner prints one table and merges the results into bench/results.json (committed).
 * `BENCH_SCALE=0.05` shrinks data and durations for a quick check; its results go to
 * .bench-data/results-scale-0.05.json instead.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from './lib/berth.js';
import type { BenchResult } from './lib/runner-result.js';
import { formatTable } from './lib/runner-table.js';
import { SCALE } from './lib/scale.js';

const BENCHMARKS = [
  'api',
  'categories',
  'query',
  'merge',
  'stream',
  'fanout',
  'fanout-cluster',
  'domains',
  'ingest',
  'filter',
] as const;
/** The committed figures are full-scale ones: a quick check at another scale is kept apart (gitignored). */
const RESULTS_FILE =
  SCALE === 1 ? join(ROOT, 'bench', 'results.json') : join(ROOT, '.bench-data', `results-scale-${SCALE}.json`);

interface Entry extends BenchResult {
  /** The command that produced the figures. */
  command: string;
  date: string;
  node: string;
  cpu: string;
  cores: number;
  seconds: number;
  scale: number;
  /** Set when the benchmark did not finish. */
  failure?: string;
}

interface ResultsFile {
  node: string;
  cpu: string;
  cores: number;
  date: string;
  benchmarks: Record<string, Entry>;
}

function selected(): string[] {
  const names = process.argv.slice(2).filter((a) => a !== '--');
  const unknown = names.filter((n) => !(BENCHMARKS as readonly string[]).includes(n));
  if (unknown.length > 0) {
    console.error(`unknown benchmark ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
    process.exit(2);
  }
  return names.length > 0 ? names : [...BENCHMARKS];
}

function runOne(name: string, resultFile: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('bench', `${name}.ts`)], {
      cwd: ROOT,
      env: { ...process.env, BENCH_RESULT_FILE: resultFile },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal === null ? null : 128)));
  });
}

function readResults(): ResultsFile | undefined {
  try {
    return JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as ResultsFile;
  } catch {
    return undefined;
  }
}

const names = selected();
const work = mkdtempSync(join(tmpdir(), 'berth-bench-run-'));
const entries: Entry[] = [];
console.log(`# Berth benchmarks: ${names.join(', ')} (node ${process.version}, BENCH_SCALE=${SCALE})`);
try {
  for (const name of names) {
    const command = `npm run bench -- ${name}${SCALE === 1 ? '' : ` (BENCH_SCALE=${SCALE})`}`;
    const base = {
      name,
      rows: [],
      command,
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      scale: SCALE,
    };
    if (!existsSync(join(ROOT, 'bench', `${name}.ts`))) {
      entries.push({ ...base, seconds: 0, failure: `bench/${name}.ts does not exist yet` });
      continue;
    }
    console.log(`\n## ${name}`);
    const started = Date.now();
    const file = join(work, `${name}.json`);
    const code = await runOne(name, file);
    const seconds = Math.round((Date.now() - started) / 1000);
    if (code !== 0 || !existsSync(file)) {
      entries.push({ ...base, seconds, failure: `exited with ${code}` });
      continue;
    }
    const result = JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
    entries.push({ ...base, ...result, seconds });
    console.log(`## ${name}: ${seconds} s`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(`\n${formatTable(entries)}`);
for (const e of entries) {
  if (e.failure !== undefined) console.log(`${e.name}: FAILED (${e.failure})`);
  for (const s of e.skipped ?? []) console.log(`${e.name}: skipped ${s}`);
}

// Only finished benchmarks replace their earlier figures.
const previous = readResults();
const file: ResultsFile = {
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  date: new Date().toISOString(),
  benchmarks: { ...previous?.benchmarks },
};
for (const e of entries) if (e.failure === undefined) file.benchmarks[e.name] = e;
mkdirSync(dirname(RESULTS_FILE), { recursive: true });
writeFileSync(RESULTS_FILE, `${JSON.stringify(file, null, 2)}\n`);
console.log(`\nwrote ${RESULTS_FILE}`);
if (entries.some((e) => e.failure !== undefined && !e.failure.includes('does not exist'))) process.exitCode = 1;
