/**
 * `domains`: req/s of `GET /domains` pages and of `GET /domains/name-availability` with 100,000
 * domains, DNS answered by a local stub, against the same SQL (captured from Berth on the wire)
 * replayed through the same driver at the same concurrency. Target: Berth at most 2× slower
 * (ratio ≥ 0.5). Pages: 25 domains, at the start, 10 %, 50 % and 90 % into five instances.
 */
import { type BenchDatabase, copyPglite, createDatabase, databaseKinds, seedFixture, startBerth } from './lib/berth.js';
import { captureBerthSql } from './lib/capture-berth.js';
import { type Contender, interleaved } from './lib/compare.js';
import { startDnsStub } from './lib/dns-stub.js';
import { AVAILABILITY, domainsWorld, TOKEN } from './lib/domains-world.js';
import { runLoad } from './lib/load.js';
import { atLeast, type BenchResult, progress, writeResult } from './lib/runner-result.js';
import { CONNECTIONS, scaled } from './lib/scale.js';
import type { ReplayStatement } from './lib/sql-capture.js';
import { startSqlLoad } from './lib/sql-load.js';
import type { RunFigures } from './lib/stats.js';

const NAME = 'domains';
const PAGE = 25;
const PER_INSTANCE = scaled(1_000, 40);
const MEASURED_INSTANCES = 5;
const POSITIONS = [0, 0.1, 0.5, 0.9];
const AUTH = { authorization: `Bearer ${TOKEN}` };

const world = domainsWorld(PER_INSTANCE, MEASURED_INSTANCES);

async function get(url: string, path: string): Promise<any> {
  const res = await fetch(`${url}${path}`, { headers: AUTH });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

/** Paths of the measured pages: each instance walked page by page for its cursors. */
async function pagePaths(url: string): Promise<string[]> {
  const paths: string[] = [];
  for (const mi of world.measuredInstances) {
    const walk: string[] = [];
    let path: string | undefined = `/domains?moduleInstanceId=${mi}&limit=${PAGE}`;
    while (path !== undefined) {
      walk.push(path);
      const next: string | undefined = (await get(url, path)).meta.nextCursor;
      path = next === undefined ? undefined : `/domains?moduleInstanceId=${mi}&limit=${PAGE}&cursor=${next}`;
    }
    for (const p of new Set(POSITIONS.map((at) => walk[Math.floor(at * walk.length)]!))) paths.push(p);
  }
  return paths;
}

const availabilityPaths = AVAILABILITY.map((a) => `/domains/name-availability?${a.query}`);

/** Every availability question gets the answer it is there to exercise. */
async function checkAvailability(url: string): Promise<void> {
  for (const [i, a] of AVAILABILITY.entries()) {
    const { data } = await get(url, availabilityPaths[i]!);
    const got = data.available ? 'available' : `${data.conflict?.type} ${data.conflict?.owner}`;
    if (got !== a.expect) throw new Error(`${availabilityPaths[i]}: expected ${a.expect}, got ${got}`);
  }
}

interface Sql {
  pages: ReplayStatement[][];
  availability: ReplayStatement[][];
}

async function measure(
  kind: BenchDatabase['kind'],
  db: BenchDatabase,
  env: Record<string, string>,
  paths: { pages: string[] },
  sql: Sql | undefined,
): Promise<BenchResult['rows']> {
  const baselineDb = kind === 'pglite' ? copyPglite(db, `${NAME}-baseline`) : db;
  // The per-principal request limit is off: at 50 connections one principal is far past it, and a figure over 429s
  // would measure the limiter, not the route.
  const berth = await startBerth(db, { LOG_LEVEL: 'info', RATE_LIMIT_MAX: '0', ...env });
  const baseline = sql === undefined ? undefined : await startSqlLoad(baselineDb.target);
  try {
    progress(NAME, `${kind}: Berth pid ${berth.pid} at ${berth.url}`);
    if (paths.pages.length === 0) paths.pages = await pagePaths(berth.url);
    await checkAvailability(berth.url);
    const rows: BenchResult['rows'] = [];
    const cases = [
      { what: `GET /domains, pages of ${PAGE}`, paths: paths.pages, sql: sql?.pages },
      { what: 'GET /domains/name-availability', paths: availabilityPaths, sql: sql?.availability },
    ];
    for (const c of cases) {
      const contenders: Contender[] = [
        {
          label: `Berth ${c.what}`,
          run: (durationS) =>
            runLoad({ url: berth.url, path: c.paths, headers: AUTH, connections: CONNECTIONS, durationS }),
        },
      ];
      if (baseline !== undefined && c.sql !== undefined) {
        const requests = c.sql;
        contenders.push({
          label: `the same SQL (${c.what})`,
          run: (durationS) => baseline.run({ requests, concurrency: CONNECTIONS, durationS }),
        });
      }
      const [b, base] = await interleaved(`${NAME} ${kind}`, contenders);
      const figure = (label: string, f: RunFigures) => ({ label, value: f.rate, median: f.p50, p99: f.p99 });
      const label = `${c.what} (${world.domainCount.toLocaleString('en')} domains, ${c.paths.length} requests in turn)`;
      const row = { ...figure(label, b!), database: kind, unit: 'req/s' as const };
      if (base === undefined || c.sql === undefined) {
        rows.push({
          ...row,
          baseline: { label: 'the same SQL (not captured: needs PostgreSQL)', value: Number.NaN },
          ratio: Number.NaN,
          target: '≥ 0.5',
          met: null,
        });
        continue;
      }
      const statements = c.sql.map((r) => r.length);
      rows.push(
        atLeast(
          {
            ...row,
            baseline: figure(`the same SQL, Kysely on ${kind}, ${CONNECTIONS} concurrent`, base),
            notes: `statements per request: ${Math.min(...statements)}–${Math.max(...statements)}, replayed one after another (Berth runs some concurrently); ratio ≥ 0.5 is "at most 2× slower"`,
          },
          0.5,
        ),
      );
    }
    return rows;
  } finally {
    await baseline?.close();
    await berth.stop();
    if (baselineDb !== db) await baselineDb.close();
  }
}

const skipped: string[] = [];
const rows: BenchResult['rows'] = [];
const stub = await startDnsStub(world.stubRecords);
const env = { DNS_SERVERS: stub.address, CURSOR_SECRET: 'berth-bench-domains' };
const databases = new Map<string, BenchDatabase>();
try {
  const kinds = await databaseKinds(skipped);
  // Both databases at once: `berth seed` of 100,000 domains is one core's work for a minute or two.
  await Promise.all(
    kinds.map(async (kind) => {
      const db = await createDatabase(NAME, kind);
      databases.set(kind, db);
      const t0 = Date.now();
      await seedFixture(db, world.fixture);
      progress(NAME, `${kind}: seeded ${world.domainCount} domains in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }),
  );
  const paths = { pages: [] as string[] };
  const pg = databases.get('postgres');
  let sql: Sql | undefined;
  if (pg !== undefined) {
    const captured = await captureBerthSql(
      NAME,
      pg,
      async (url) => {
        paths.pages = await pagePaths(url);
        return [...paths.pages, ...availabilityPaths].map((p) => async (u: string) => void (await get(u, p)));
      },
      env,
    );
    sql = { pages: captured.slice(0, paths.pages.length), availability: captured.slice(paths.pages.length) };
  }
  for (const kind of kinds) rows.push(...(await measure(kind, databases.get(kind)!, env, paths, sql)));
  progress(NAME, `the DNS stub answered ${stub.queries()} queries`);
} finally {
  for (const db of databases.values()) await db.close();
  await stub.close();
}
writeResult({ name: NAME, rows, skipped });
