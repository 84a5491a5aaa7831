/**
 * Log query on the local provider: 50 sources, 1,000,000 events over 24 h,
 * `limit: 1000`. Baseline, measured in the same run on the same database:
 * the obvious single statement (all groups in one WHERE, ORDER BY … LIMIT).
 */
import { sql } from 'kysely';
import type { Caller } from '../src/core/caller.js';
import { loadConfig } from '../src/config.js';
import { loadFixture } from '../src/fixtures/load.js';
import { createServices } from '../src/services/index.js';
import { openStore, type Store, type StoreTarget } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { report, time } from './support.js';

const SOURCES = 50;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const DAY = 86_400_000;

async function seed(store: Store, end: number): Promise<void> {
  const have = await sql<{
    n: number;
  }>`select count(*)::int as n from log_events where cloud_account_id = 'bench-acct'`.execute(store.db);
  if ((have.rows[0]?.n ?? 0) === EVENTS) return;
  await sql`delete from log_events where cloud_account_id = 'bench-acct'`.execute(store.db).catch(() => undefined);
  await loadFixture(store.db, {
    organizations: [{ id: 'bench-org', name: 'Bench', permittedIdentityProviders: [] }],
    cloudAccounts: [{ id: 'bench-acct', organizationId: 'bench-org', provider: 'local', region: 'eu-west-1' }],
    projects: [{ id: 'bench-prj', organizationId: 'bench-org', name: 'Bench' }],
    environments: [{ id: 'bench-env', projectId: 'bench-prj', name: 'prod' }],
    moduleInstances: Array.from({ length: SOURCES }, (_, i) => ({
      id: `bench-mi-${i}`,
      environmentId: 'bench-env',
      name: `svc-${i}`,
      logSources: [
        { id: 'app', kind: 'ui.logs', cloudAccountId: 'bench-acct', region: 'eu-west-1', logGroup: `/bench/svc-${i}` },
      ],
    })),
  });
  const t0 = Date.now();
  const step = DAY / EVENTS;
  // Generated inside the database, spread evenly over the groups: 10% ERROR, a JSON line every fourth event.
  await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level, json)
    select 'bench-acct', 'eu-west-1', '/bench/svc-' || (i % ${SOURCES}), 'task-' || (i % 3),
      ${end - DAY}::bigint + floor(i * ${step}::float8)::bigint, ${end - DAY}::bigint + floor(i * ${step}::float8)::bigint,
      lpad((${end - DAY}::bigint + floor(i * ${step}::float8)::bigint)::text, 16, '0') || lpad(i::text, 12, '0'),
      case when i % 4 = 0 then '{"level":"' || (case when (i / ${SOURCES}) % 20 = 0 then 'error' else 'info' end) || '","msg":"request ' || i || '","status":' || (200 + (i / ${SOURCES}) % 5) || '}'
           else (case when (i / ${SOURCES}) % 20 = 5 then 'ERROR' else 'INFO' end) || ' handled request ' || i || ' in ' || (i % 900) || 'ms' end,
      case when (i / ${SOURCES}) % 20 in (0, 5) then 'ERROR' else 'INFO' end,
      case when i % 4 = 0 then ('{"level":"' || (case when (i / ${SOURCES}) % 20 = 0 then 'error' else 'info' end) || '","msg":"request ' || i || '","status":' || (200 + (i / ${SOURCES}) % 5) || '}')::jsonb else null end
    from generate_series(0, ${EVENTS - 1}) as i`.execute(store.db);
  await sql`analyze log_events`.execute(store.db);
  console.log(`  seeded ${EVENTS} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

export async function benchLogQuery(target: StoreTarget, label: string): Promise<void> {
  const store = await openStore(target);
  await migrate(store);
  const end = Date.UTC(2026, 0, 2);
  await seed(store, end);
  const services = createServices(store, loadConfig({}, { LOG_LEVEL: 'silent' }));
  const caller: Caller = {
    principalId: 'bench',
    keyId: 'bench',
    superadmin: true,
    keyOrganizationId: null,
    memberships: new Map(),
  };
  const base = { startTime: end - DAY, endTime: end, environmentId: 'bench-env' };
  const groups = Array.from({ length: SOURCES }, (_, i) => `/bench/svc-${i}`);

  const baseline = await time('baseline: one statement, all groups, ORDER BY … LIMIT 1000', () =>
    sql`select timestamp, message, log_group, log_stream, event_id, level from log_events
      where cloud_account_id = 'bench-acct' and region = 'eu-west-1' and log_group in (${sql.join(groups)})
        and timestamp between ${end - DAY} and ${end}
      order by timestamp desc, event_id desc limit 1000`.execute(store.db),
  );
  const rows = [
    baseline,
    await time('Berth: environment, limit 1000', () => services.logs.query(caller, { ...base, limit: 1000 })),
    await time('Berth: environment, limit 1000, level ERROR', () =>
      services.logs.query(caller, { ...base, limit: 1000, filter: { kind: 'level', levels: ['ERROR'] } }),
    ),
    await time('Berth: environment, limit 1000, field status = 203', () =>
      services.logs.query(caller, {
        ...base,
        limit: 1000,
        filter: { kind: 'field', path: 'status', op: 'eq', value: 203 },
      }),
    ),
    await time('Berth: environment, limit 1000, not text contains "request 1"', () =>
      services.logs.query(caller, {
        ...base,
        limit: 1000,
        filter: { kind: 'not', node: { kind: 'text', op: 'contains', value: 'request 1' } },
      }),
    ),
    await time(
      'Berth: environment, limit 1000, level FATAL (no match: whole window)',
      () => services.logs.query(caller, { ...base, limit: 1000, filter: { kind: 'level', levels: ['FATAL'] } }),
      5,
      1,
    ),
    await time(
      'Berth: environment, complete (10,000 rows)',
      () => services.logs.query(caller, { ...base, complete: true }),
      5,
      1,
    ),
  ];
  const page = await services.logs.query(caller, { ...base, limit: 1000 });
  if (page.resultCount !== 1000) throw new Error(`expected 1000 rows, got ${page.resultCount}`);
  report(`log query, ${SOURCES} sources, ${EVENTS.toLocaleString('en')} events (${label})`, rows, baseline);
  await services.close();
  await store.close();
}
