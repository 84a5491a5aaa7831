import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { storeTarget } from '../../src/runtime.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { ROOT, type BenchDatabase, type DatabaseKind } from './berth.js';
import { BENCH_ACCOUNT, BENCH_REGION } from './b-fixture.js';
import { ADMIN_URL } from './postgres.js';

/** Generated data ends here (fixed, so a kept data set answers the same queries every run). */
export const DATA_END_MS = Date.UTC(2026, 0, 2);
export const DAY_MS = 86_400_000;

/** Benchmark data kept between runs (gitignored). */
const BENCH_DATA = join(ROOT, '.bench-data');

function database(kind: DatabaseKind, env: Record<string, string>): BenchDatabase {
  return { kind, env, target: storeTarget(loadConfig(env)), url: env.DATABASE_URL, close: async () => undefined };
}

async function onServer<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface KeptDatabase {
  /** What Berth serves. */
  db: BenchDatabase;
  /**
   * What an in-process baseline opens: on PGlite a copy made when seeding (PGlite opens a directory
   * in one process at a time, and Berth holds the first), on PostgreSQL the same database.
   */
  baseline: BenchDatabase;
}

/**
 * A data set seeded once and kept while `key` (data version and size) is unchanged, because seeding
 * a million events takes minutes on PGlite: `.bench-data/<name>/` or the PostgreSQL database
 * `berth_bench_<name>`. The key is written only after `seed` finished, so an interrupted seed starts
 * over. Berth migrates what it finds when it starts, so a new migration does not need a new key;
 * a change to the generated data does.
 */
export async function keptDatabase(
  kind: DatabaseKind,
  name: string,
  key: string,
  seed: (db: BenchDatabase) => Promise<void>,
): Promise<KeptDatabase> {
  if (kind === 'pglite') {
    const dir = join(BENCH_DATA, name);
    const marker = join(dir, 'key');
    const db = database(kind, { BERTH_DATA_DIR: join(dir, 'data') });
    const baseline = database(kind, { BERTH_DATA_DIR: join(dir, 'baseline') });
    if (!existsSync(marker) || readFileSync(marker, 'utf8') !== key) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      await seed(db);
      cpSync(db.env.BERTH_DATA_DIR!, baseline.env.BERTH_DATA_DIR!, {
        recursive: true,
        filter: (path) => !basename(path).startsWith('berth.lock'),
      });
      writeFileSync(marker, key);
    }
    return { db, baseline };
  }
  const dbName = `berth_bench_${name}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  const db = database(kind, { DATABASE_URL: url.toString() });
  const exists = await onServer(ADMIN_URL, (c) => c.query('select 1 from pg_database where datname = $1', [dbName]));
  const current =
    exists.rowCount === 0
      ? undefined
      : await onServer(url.toString(), (c) =>
          c.query<{ key: string }>('select key from bench_data_key').then(
            (r) => r.rows[0]?.key,
            () => undefined,
          ),
        );
  if (current !== key) {
    await onServer(ADMIN_URL, async (c) => {
      await c.query(`drop database if exists ${dbName} with (force)`);
      await c.query(`create database ${dbName}`);
    });
    await seed(db);
    await onServer(url.toString(), async (c) => {
      await c.query('create table bench_data_key (key text not null)');
      await c.query('insert into bench_data_key values ($1)', [key]);
    });
  }
  return { db, baseline: db };
}

/** Berth's own driver stack (Kysely over PGlite or node-postgres) on a benchmark database, migrated. */
export async function openBenchStore(db: BenchDatabase): Promise<Store> {
  const store = await openStore(db.target);
  await migrate(store);
  return store;
}

export interface GeneratedEvents {
  /** Log group i is `${groupPrefix}${i}`. */
  groupPrefix: string;
  groups: number;
  events: number;
  /** The events are spread evenly over [DATA_END_MS - spanMs, DATA_END_MS). */
  spanMs: number;
}

/**
 * Inserts events generated inside the database, round-robin over the groups and three streams
 * `task-0..2`: 10% ERROR (the level Berth derives from the line), every fourth line JSON
 * (`{"level","msg","status"}`), the others text with a leading level. Then ANALYZE.
 */
export async function insertGeneratedEvents(store: Store, g: GeneratedEvents): Promise<void> {
  const start = DATA_END_MS - g.spanMs;
  const step = g.spanMs / g.events;
  const chunk = 250_000;
  for (let from = 0; from < g.events; from += chunk) {
    const to = Math.min(g.events, from + chunk) - 1;
    await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time,
        event_id, message, level, json)
      select ${BENCH_ACCOUNT}::text, ${BENCH_REGION}::text, ${g.groupPrefix}::text || (i % ${g.groups}::int)::text,
        'task-' || (i % 3), t, t, lpad(t::text, 16, '0') || lpad(i::text, 12, '0'), m, l,
        case when i % 4 = 0 then m::jsonb end
      from (
        select i, t, case when e then 'ERROR' else 'INFO' end as l,
          case when i % 4 = 0
            then '{"level":"' || (case when e then 'error' else 'info' end) || '","msg":"request ' || i
              || '","status":' || (200 + (i / ${g.groups}::int) % 5) || '}'
            else (case when e then 'ERROR' else 'INFO' end) || ' handled request ' || i || ' in ' || (i % 900) || 'ms'
          end as m
        from (select i, ${start}::bigint + floor(i * ${step}::float8)::bigint as t, (i / ${g.groups}::int) % 10 = 0 as e
          from generate_series(${from}::int, ${to}::int) as i) as s
      ) as r`.execute(store.db);
  }
  await sql`analyze log_events`.execute(store.db);
}
