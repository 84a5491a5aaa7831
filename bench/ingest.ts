import { PGlite } from '@electric-sql/pglite';
/**
 * `ingest`: lines/s of `berth logs ingest FILE` straight to the database (no server running), on PGlite
 * and PostgreSQL, timed as a user sees it: from starting the command to its exit. Beside it, reported:
 * the same command through a running server (`--url`). Baseline in the same run: `COPY` of the very
 * rows Berth writes (level and parsed JSON derived, event ids made, outside the timing) into the same
 * table through the same driver (PGlite's `COPY … FROM '/dev/blob'`; node-postgres with
 * pg-copy-streams). Target ≥ 0.5. Each measurement gets its own fresh database with the same fixture.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { deriveLevel, parseJsonMessage } from '../src/core/log-level.js';
import { newEventId } from '../src/store/log-ingest/events.js';
import {
  createDatabase,
  databaseKinds,
  runBerthCli,
  seedFixture,
  startBerth,
  type BenchDatabase,
  type DatabaseKind,
} from './lib/berth.js';
import { BENCH_ACCOUNT, BENCH_REGION, BENCH_TOKEN, benchFixture } from './lib/b-fixture.js';
import { openBenchStore } from './lib/b-dataset.js';
import { progress as say, type BenchRow, writeResult } from './lib/runner-result.js';
import { scaled } from './lib/scale.js';

const NAME = 'ingest';
const progress = (message: string) => say(NAME, message);
const LINES = scaled(500_000, 10_000);
const GROUP = '/bench/ingest';
const STREAM = 'app/1';
const COLUMNS =
  'cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level, json';

/** A service's output: one JSON line in three, the others text with a leading level. */
function inputLines(n: number): string[] {
  return Array.from({ length: n }, (_, i) =>
    i % 3 === 0
      ? JSON.stringify({ level: i % 10 === 0 ? 'error' : 'info', msg: `request ${i}`, latencyMs: i % 700 })
      : `${i % 10 === 1 ? 'ERROR' : 'INFO'} worker ${i % 8} finished job ${i} in ${i % 900}ms`,
  );
}

/** COPY's text format: tab-separated, `\N` for NULL, backslash escapes. */
const copyText = (v: string) =>
  v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');

/** The rows `berth logs ingest` writes for these lines, as COPY input. */
function copyInput(lines: string[]): string {
  const now = Date.now();
  let out = '';
  for (const message of lines) {
    const json = parseJsonMessage(message);
    const fields = [
      BENCH_ACCOUNT,
      BENCH_REGION,
      GROUP,
      STREAM,
      String(now),
      String(now),
      newEventId(now),
      copyText(message),
      deriveLevel(message, json),
      json === undefined ? '\\N' : copyText(message),
    ];
    out += `${fields.join('\t')}\n`;
  }
  return out;
}

async function freshDatabase(kind: DatabaseKind, suffix: string): Promise<BenchDatabase> {
  const db = await createDatabase(`${NAME}_${suffix}`, kind);
  await seedFixture(db, benchFixture());
  return db;
}

async function countEvents(db: BenchDatabase): Promise<number> {
  const store = await openBenchStore(db);
  try {
    const r = await store.db
      .selectFrom('log_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('log_group', '=', GROUP)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  } finally {
    await store.close();
  }
}

/** Seconds of `COPY` of the rows into a fresh database's log_events, through the same driver as Berth's. */
async function timeCopy(kind: DatabaseKind, input: string): Promise<number> {
  const db = await freshDatabase(kind, 'copy');
  try {
    const statement = `copy log_events (${COLUMNS}) from`;
    let seconds: number;
    if (kind === 'pglite') {
      // Berth runs PGlite in a worker thread; the floor is PGlite itself, opened here on the same directory.
      await (await openBenchStore(db)).close();
      const dataDir = db.target.kind === 'pglite' ? db.target.dataDir : undefined;
      const lite = await PGlite.create(dataDir);
      try {
        const blob = new Blob([input]);
        const t0 = performance.now();
        await lite.query(`${statement} '/dev/blob'`, [], { blob });
        seconds = (performance.now() - t0) / 1000;
      } finally {
        await lite.close();
      }
    } else {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const t0 = performance.now();
        await pipeline(Readable.from([input]), client.query(copyFrom(`${statement} stdin`)));
        seconds = (performance.now() - t0) / 1000;
      } finally {
        await client.end();
      }
    }
    const n = await countEvents(db);
    if (n !== LINES) throw new Error(`COPY wrote ${n} rows of ${LINES}`);
    return seconds;
  } finally {
    await db.close();
  }
}

const ingestArgs = (file: string) => [
  'logs',
  'ingest',
  '--account',
  BENCH_ACCOUNT,
  '--region',
  BENCH_REGION,
  '--group',
  GROUP,
  '--stream',
  STREAM,
  '--no-progress',
  file,
];

/** Seconds of `berth logs ingest FILE`, start to exit, on a fresh database; through a server when `viaServer`. */
async function timeCli(kind: DatabaseKind, file: string, viaServer: boolean, expected = LINES): Promise<number> {
  const db = await freshDatabase(kind, viaServer ? 'server' : 'cli');
  const server = viaServer ? await startBerth(db) : undefined;
  try {
    const args = [...ingestArgs(file), ...(server ? ['--url', server.url, '--token', BENCH_TOKEN] : [])];
    const t0 = performance.now();
    await runBerthCli(args, db.env);
    const seconds = (performance.now() - t0) / 1000;
    await server?.stop();
    const n = await countEvents(db);
    if (n !== expected) throw new Error(`berth logs ingest wrote ${n} events of ${expected}`);
    return seconds;
  } finally {
    await server?.stop();
    await db.close();
  }
}

async function benchDatabase(kind: DatabaseKind, file: string, empty: string, input: string): Promise<BenchRow[]> {
  progress(`${kind}: COPY of ${LINES.toLocaleString('en')} rows`);
  const copy = await timeCopy(kind, input);
  progress(`${kind}: berth logs ingest, straight to the database`);
  const direct = await timeCli(kind, file, false);
  const startup = await timeCli(kind, empty, false, 0);
  progress(`${kind}: berth logs ingest, through a server`);
  const viaServer = await timeCli(kind, file, true);
  const baseline = { label: 'COPY of the same rows, same driver', value: LINES / copy };
  const rate = (s: number) => LINES / s;
  return [
    {
      label: `berth logs ingest of ${LINES.toLocaleString('en')} lines, straight to the database`,
      database: kind,
      unit: 'lines/s',
      value: rate(direct),
      baseline,
      ratio: rate(direct) / baseline.value,
      target: '≥ 0.5',
      met: rate(direct) / baseline.value >= 0.5,
      notes:
        `${direct.toFixed(1)} s from start to exit, of which ${startup.toFixed(1)} s start-up (the same command on an ` +
        `empty file); COPY ${copy.toFixed(1)} s`,
    },
    {
      label: `berth logs ingest of ${LINES.toLocaleString('en')} lines, through a running server`,
      database: kind,
      unit: 'lines/s',
      value: rate(viaServer),
      baseline,
      ratio: rate(viaServer) / baseline.value,
      target: 'reported',
      met: null,
      notes: `${viaServer.toFixed(1)} s from start to exit (POST /cloud/logs/local/events in batches)`,
    },
  ];
}

const work = mkdtempSync(join(tmpdir(), 'berth-bench-ingest-'));
try {
  const lines = inputLines(LINES);
  const file = join(work, 'input.log');
  const empty = join(work, 'empty.log');
  writeFileSync(file, `${lines.join('\n')}\n`);
  writeFileSync(empty, '');
  const input = copyInput(readFileSync(file, 'utf8').trimEnd().split('\n'));
  const skipped: string[] = [];
  const rows: BenchRow[] = [];
  for (const kind of await databaseKinds(skipped)) rows.push(...(await benchDatabase(kind, file, empty, input)));
  for (const r of rows) if (r.notes) progress(`${r.label} [${r.database}]: ${r.notes}`);
  writeResult({ name: NAME, rows, skipped });
} finally {
  rmSync(work, { recursive: true, force: true });
}
