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
import { insertLocalEvents, type LocalEventInput, newEventId } from '../src/store/log-ingest/events.js';
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

/** Rows a chunk in the idempotent COPY below, as in the store's insert (`insertLocalEvents`). */
const CHUNK_LINES = 5_000;

/**
 * Seconds of writing the rows into a fresh database's log_events through the same driver as Berth's: `plain` is
 * one `COPY` (the floor); `staged` is the idempotent form a `COPY` ingest would need, since `COPY` has no `ON
 * CONFLICT`: per chunk of 5,000 rows, `COPY` into a temporary table, then `INSERT … SELECT … ON CONFLICT DO
 * NOTHING`, in one transaction.
 */
async function timeCopy(kind: DatabaseKind, input: string, mode: 'plain' | 'staged' = 'plain'): Promise<number> {
  const db = await freshDatabase(kind, `copy_${mode}`);
  const lines = input.split('\n').slice(0, -1);
  const chunks =
    mode === 'plain'
      ? [input]
      : Array.from(
          { length: Math.ceil(lines.length / CHUNK_LINES) },
          (_, i) => `${lines.slice(i * CHUNK_LINES, (i + 1) * CHUNK_LINES).join('\n')}\n`,
        );
  const target = mode === 'plain' ? 'log_events' : 'staged_events';
  const stage = [
    'begin',
    'create temporary table if not exists staged_events (like log_events including defaults) on commit delete rows',
  ];
  const merge = [
    `insert into log_events (${COLUMNS}) select ${COLUMNS} from staged_events
      on conflict (cloud_account_id, region, log_group, event_id) do nothing`,
    'commit',
  ];
  try {
    const statement = `copy ${target} (${COLUMNS}) from`;
    let seconds: number;
    if (kind === 'pglite') {
      // Berth runs PGlite in a worker thread; the floor is PGlite itself, opened here on the same directory.
      await (await openBenchStore(db)).close();
      const dataDir = db.target.kind === 'pglite' ? db.target.dataDir : undefined;
      const lite = await PGlite.create(dataDir);
      try {
        const blobs = chunks.map((chunk) => new Blob([chunk]));
        const t0 = performance.now();
        for (const blob of blobs) {
          if (mode === 'staged') for (const s of stage) await lite.query(s);
          await lite.query(`${statement} '/dev/blob'`, [], { blob });
          if (mode === 'staged') for (const s of merge) await lite.query(s);
        }
        seconds = (performance.now() - t0) / 1000;
      } finally {
        await lite.close();
      }
    } else {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const t0 = performance.now();
        for (const chunk of chunks) {
          if (mode === 'staged') for (const s of stage) await client.query(s);
          await pipeline(Readable.from([chunk]), client.query(copyFrom(`${statement} stdin`)));
          if (mode === 'staged') for (const s of merge) await client.query(s);
        }
        seconds = (performance.now() - t0) / 1000;
      } finally {
        await client.end();
      }
    }
    const n = await countEvents(db);
    if (n !== LINES) throw new Error(`COPY (${mode}) wrote ${n} rows of ${LINES}`);
    return seconds;
  } finally {
    await db.close();
  }
}

/** Seconds of the store's own insert of the same rows (`insertLocalEvents`: one statement per 5,000), by Berth's driver. */
async function timeStoreInsert(kind: DatabaseKind, input: string): Promise<number> {
  const db = await freshDatabase(kind, 'store_insert');
  try {
    const events: LocalEventInput[] = input
      .split('\n')
      .slice(0, -1)
      .map((line) => {
        const [, , , , timestamp, ingestion, eventId, message] = line.split('\t');
        return {
          cloudAccountId: BENCH_ACCOUNT,
          region: BENCH_REGION,
          logGroup: GROUP,
          logStream: STREAM,
          timestamp: Number(timestamp),
          ingestionTime: Number(ingestion),
          eventId: eventId!,
          message: uncopyText(message!),
        };
      });
    const store = await openBenchStore(db);
    let seconds: number;
    try {
      const t0 = performance.now();
      await insertLocalEvents(store.db, events);
      seconds = (performance.now() - t0) / 1000;
    } finally {
      await store.close();
    }
    const n = await countEvents(db);
    if (n !== LINES) throw new Error(`the store's insert wrote ${n} rows of ${LINES}`);
    return seconds;
  } finally {
    await db.close();
  }
}

/** The inverse of `copyText`. */
const uncopyText = (v: string) =>
  v.replace(/\\([\\tnr])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : c === 'r' ? '\r' : '\\'));

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
  progress(`${kind}: idempotent COPY (staging table) and the store's insert of the same rows`);
  const staged = await timeCopy(kind, input, 'staged');
  const storeInsert = await timeStoreInsert(kind, input);
  const baseline = { label: 'COPY of the same rows, same driver', value: LINES / copy };
  const rate = (s: number) => LINES / s;
  const statementRow = (label: string, seconds: number, notes: string): BenchRow => ({
    label,
    database: kind,
    unit: 'rows/s',
    value: rate(seconds),
    baseline,
    ratio: rate(seconds) / baseline.value,
    target: 'reported',
    met: null,
    notes: `${seconds.toFixed(1)} s; ${notes}`,
  });
  return [
    statementRow(
      `idempotent COPY of the same ${LINES.toLocaleString('en')} rows: staging table + INSERT … ON CONFLICT DO NOTHING`,
      staged,
      `${CHUNK_LINES.toLocaleString('en')} rows a transaction, the form a COPY ingest would need`,
    ),
    statementRow(
      `the store's insert of the same ${LINES.toLocaleString('en')} rows (unnest, ON CONFLICT DO NOTHING)`,
      storeInsert,
      `insertLocalEvents, one statement per ${CHUNK_LINES.toLocaleString('en')} rows, through Berth's store`,
    ),
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
