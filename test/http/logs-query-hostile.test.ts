import { storeTenancy } from '../../src/store/tenancy.js';
// Hostile log queries from one tenant (issue 8), black-box over HTTP on the local provider: a filter
// whose SQL would overflow the database's parameters, a regex that would backtrack, and work that must
// stop when the client leaves or the deadline passes. Run on PGlite and on PostgreSQL.
import { sql } from 'kysely';
import { RE2JS } from 're2js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/core/caller.js';
import { LogQueryService, type LogQueryRequest } from '../../src/services/log-query/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { logSource } from '../support/log-source.js';
import {
  expectLogsInsightsOk,
  LOGS_INSIGHTS_PATH as PATH,
  type LogsInsightsResult as Result,
} from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const START = T0 - 3_600_000;
const END = T0 + 3_600_000;
const GROUPS = 50;

function world(extraGroups: string[] = []): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
      { id: 'acc-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
    ],
    projects: [
      { id: 'proj-a', organizationId: ORG_A, name: 'A' },
      { id: 'proj-b', organizationId: ORG_B, name: 'B' },
    ],
    environments: [
      { id: 'env-a', projectId: 'proj-a', name: 'many' },
      { id: 'env-b', projectId: 'proj-b', name: 'b' },
    ],
    moduleInstances: [
      ...Array.from({ length: GROUPS }, (_, i) => ({
        id: `mi-${i}`,
        environmentId: 'env-a',
        name: `svc-${i}`,
        logSources: [logSource('app', 'acc-a', `/svc/${i}`)],
      })),
      ...extraGroups.map((g, i) => ({
        id: `mi-x${i}`,
        environmentId: 'env-a',
        name: g,
        logSources: [logSource('app', 'acc-a', g)],
      })),
      { id: 'mi-b', environmentId: 'env-b', name: 'b', logSources: [logSource('app', 'acc-b', '/b/app')] },
    ],
    logEvents: [
      {
        cloudAccountId: 'acc-b',
        region: 'us-east-1',
        logGroup: '/b/app',
        logStream: 'b/1',
        timestamp: T0,
        message: 'INFO org b line',
      },
    ],
  });
}

/** `{"a":{"a":…{"a": value}}}`, `depth` levels deep. */
function nested(depth: number, value: unknown): unknown {
  let v = value;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

const deepPath = Array.from({ length: 128 }, () => 'a').join('.');

describe('a filter whose SQL would overflow the statement (the parameter bomb)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world() });
    const events = [];
    for (let g = 0; g < GROUPS; g++) {
      events.push({ message: `INFO plain line of group ${g}`, timestamp: T0 + g });
      events.push({ message: JSON.stringify(nested(128, g === 7 ? 41 : 'no')), timestamp: T0 + 100 + g });
      events.push({ message: JSON.stringify(nested(128, g === 9 ? 'v3' : 1000)), timestamp: T0 + 200 + g });
    }
    // Ingested per group through the API, as a tenant would.
    for (let g = 0; g < GROUPS; g++) {
      const res = await t.request('POST', '/cloud/logs/local/events', {
        token: TOKENS.admin,
        body: {
          accountId: 'acc-a',
          region: 'us-east-1',
          logGroup: `/svc/${g}`,
          logStream: 's/1',
          events: events.filter((_, i) => Math.floor(i / 3) === g),
        },
      });
      expect(res.status).toBe(202);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  // ~600 bytes of JSON: 128 path segments and 52 values, over 50 log groups.
  const bomb = {
    kind: 'field',
    path: deepPath,
    op: 'in',
    value: [...Array.from({ length: 40 }, (_, i) => i + 10), ...Array.from({ length: 12 }, (_, i) => `v${i}`)],
  };

  it('answers exactly, not partially, and every tenant still authenticates and queries afterwards', async () => {
    const res = await t.request<Result>('POST', PATH, {
      token: TOKENS.viewer,
      body: {
        startTime: START,
        endTime: END,
        environmentId: 'env-a',
        filter: { kind: 'or', nodes: [bomb, bomb, { kind: 'not', node: bomb }] },
      },
    });
    const all = expectLogsInsightsOk(res);
    expect(all).toMatchObject({ partial: false, missedSources: [], unsupported: [] });
    // or(bomb, not bomb) is every row.
    expect(all.rows).toHaveLength(GROUPS * 3);

    const only = expectLogsInsightsOk(
      await t.request<Result>('POST', PATH, {
        token: TOKENS.viewer,
        body: { startTime: START, endTime: END, environmentId: 'env-a', filter: bomb },
      }),
    );
    expect(only).toMatchObject({ partial: false, missedSources: [] });
    expect(only.rows.map((r) => r.sourceId).sort()).toEqual(['mi-7', 'mi-9']);

    // Another tenant, and the same one, are served as before.
    expect(
      (await t.request('GET', `/organizations/${ORG_B}/permitted-identity-providers`, { token: TOKENS.otherAdmin }))
        .status,
    ).toBe(200);
    expect(
      (await t.request('GET', `/organizations/${ORG_A}/permitted-identity-providers`, { token: TOKENS.viewer })).status,
    ).toBe(200);
    const b = expectLogsInsightsOk(
      await t.request<Result>('POST', PATH, {
        token: TOKENS.otherAdmin,
        body: { startTime: START, endTime: END, environmentId: 'env-b' },
      }),
    );
    expect(b.rows.map((r) => r.message)).toEqual(['INFO org b line']);
    expect((await t.request('GET', '/readyz')).status).toBe(200);
  });

  it('keeps a statement within MAX_SQL_PARAMS even with 256 nodes of long "in" lists', async () => {
    const wide = {
      kind: 'or',
      nodes: [
        bomb,
        ...Array.from({ length: 254 }, (_, i) => ({
          ...bomb,
          value: Array.from({ length: 100 }, (_, j) => 100_000 + i * 100 + j),
        })),
      ],
    };
    const res = await t.request<Result>('POST', PATH, {
      token: TOKENS.viewer,
      body: { startTime: START, endTime: END, environmentId: 'env-a', filter: wide },
    });
    const body = expectLogsInsightsOk(res);
    expect(body).toMatchObject({ partial: false });
    expect(body.rows.map((r) => r.sourceId).sort()).toEqual(['mi-7', 'mi-9']);
    expect(
      (await t.request('GET', `/organizations/${ORG_B}/permitted-identity-providers`, { token: TOKENS.otherAdmin }))
        .status,
    ).toBe(200);
  });
});

describe('a regex that would backtrack', () => {
  const BIG = '/big';
  const EVENTS = 100_000;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      fixture: world([BIG]),
      // Room for a loaded CI machine (a 3 s source limit was once passed there, making the answer partial): a
      // backtracking engine would take far longer than any of these on (.{0,30}){30}x.
      config: { LOG_QUERY_DEADLINE_MS: 10_000, LOG_QUERY_SOURCE_TIMEOUT_MS: 8_000 },
    });
    // Every 997th message holds an x.
    await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level, json)
      select 'acc-a', 'us-east-1', ${BIG}, 's/' || (i % 4), ${T0}::bigint - i * 10, ${T0}::bigint, lpad(i::text, 28, '0'),
        'INFO handled request ' || i || ' in ' || (i % 900) || 'ms' || case when i % 997 = 0 then ' xfer' else '' end, 'INFO', null
      from generate_series(1, ${EVENTS}) as i`.execute(t.store.db);
    await sql`analyze log_events`.execute(t.store.db);
    // As `berth serve` does at start: the filter threads and the case-folding classes are ready before the first
    // filtering request, which would otherwise build the classes on the event loop.
    await t.services.filters.warm();
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** Sends the query while polling /healthz; returns the answer, how long it took, and the slowest /healthz. */
  async function whilePolling(filter: unknown, extra: Record<string, unknown> = {}) {
    let slowest = 0;
    let polls = 0;
    let done = false;
    // The test's own first fetch sets up its HTTP client: not counted.
    await (await fetch(`${t.url}/healthz`)).text();
    const poller = (async () => {
      while (!done) {
        const started = performance.now();
        const res = await fetch(`${t.url}/healthz`);
        await res.text();
        slowest = Math.max(slowest, performance.now() - started);
        polls++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = performance.now();
    const res = await t.request<Result>('POST', PATH, {
      token: TOKENS.viewer,
      body: { startTime: START - 2 * 86_400_000, endTime: END, logSourceKeys: ['mi-x0::app'], ...extra, filter },
    });
    const elapsed = performance.now() - started;
    done = true;
    await poller;
    return { body: expectLogsInsightsOk(res), elapsed, slowest, polls };
  }

  const expected = (pattern: string) => {
    const re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
    const out: string[] = [];
    for (let i = 1; i <= EVENTS; i++) {
      const m = `INFO handled request ${i} in ${i % 900}ms${i % 997 === 0 ? ' xfer' : ''}`;
      if (re.test(m)) out.push(m);
    }
    return out;
  };

  // /healthz within 500 ms: `npm test` runs two files at once on two cores (261 ms was seen under CI load); a
  // backtracking regex on the event loop would block it for seconds. The strict bounds are the reliability suite's.
  it('(.{0,30}){30}x over 100,000 events: an exact answer, in time, and /healthz keeps answering within 500 ms', async () => {
    const { body, elapsed, slowest, polls } = await whilePolling({
      kind: 'text',
      op: 'regex',
      value: '(.{0,30}){30}x',
    });
    expect(elapsed).toBeLessThan(8_000);
    expect(polls).toBeGreaterThan(0);
    expect(slowest).toBeLessThan(500);
    expect(body).toMatchObject({ partial: false, missedSources: [] });
    expect(body.rows.map((r) => r.message).sort()).toEqual(expected('(.{0,30}){30}x').sort());
  });

  it('a heavy regex without a literal over 10,000 rows ends by its deadline with an honest answer', async () => {
    const pattern = '(.{0,30}){30}[xq]';
    const { body, elapsed, slowest } = await whilePolling(
      { kind: 'text', op: 'regex', value: pattern },
      { complete: true },
    );
    // The deadline (10 s) and time to send the answer.
    expect(elapsed).toBeLessThan(11_500);
    // RE2 yields between slices; what remains is reading and sending 10,000 rows, one PGlite statement and one
    // serialization (slicing those is the fair-shares issue's work), so the bound here is looser than above.
    expect(slowest).toBeLessThan(1_000);
    if (body.partial) {
      expect(body.missedSources).toEqual([BIG]);
    } else {
      // Complete within the deadline: then exactly right, over the 10,000 newest events.
      const newest = new Set(Array.from({ length: 10_000 }, (_, k) => k + 1));
      const want = expected(pattern).filter((m) => newest.has(Number(/request (\d+)/.exec(m)![1])));
      expect(body.rows.map((r) => r.message).sort()).toEqual(want.sort());
    }
  });
});

describe.runIf(onPostgres)('statements stop when their request does (PostgreSQL)', () => {
  let t: TestApp;
  // A read that takes seconds: a not over many JSON predicates, tested on each of 10,001 rows (no index helps). The
  // local backend reads it in slices of DB_SLICE_MS: a slice runs when the deadline passes, or none does.
  const heavy = {
    kind: 'not',
    node: {
      kind: 'or',
      nodes: Array.from({ length: 60 }, (_, i) => ({
        kind: 'field',
        path: 'a.b',
        op: 'in',
        value: Array.from({ length: 100 }, (_, j) => -(i * 100 + j) - 1),
      })),
    },
  };
  beforeAll(async () => {
    t = await startTestApp({
      fixture: world(['/heavy']),
      config: {
        MAX_SQL_BYTES: 16 * 1024 * 1024,
        MAX_SQL_PARAMS: 30_000,
        LOG_QUERY_SOURCE_TIMEOUT_MS: 60_000,
        LOG_QUERY_DEADLINE_MS: 60_000,
      },
    });
    await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time, event_id, message, level, json)
      select 'acc-a', 'us-east-1', '/heavy', 's', ${T0}::bigint - i, ${T0}::bigint, lpad(i::text, 28, '0'),
        '{"a":{"b":' || i || '}}', 'INFO', ('{"a":{"b":' || i || '}}')::jsonb
      from generate_series(1, 100000) as i`.execute(t.store.db);
    await sql`analyze log_events`.execute(t.store.db);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  const viewer: Caller = {
    principalId: 'p-viewer',
    keyId: 'k-viewer',
    superadmin: false,
    keyOrganizationId: ORG_A,
    memberships: new Map([[ORG_A, 'viewer']]),
  };
  // A slice statement of the log query, of one lane or of several: both name the column `slice_kept`.
  const running = async () => {
    const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state = 'active' and query like '%slice_kept%' and pid <> pg_backend_pid()`.execute(
      t.store.db,
    );
    return r.rows[0]!.n;
  };
  const body = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      startTime: START - 86_400_000,
      endTime: END,
      logSourceKeys: ['mi-x0::app'],
      complete: true,
      filter: heavy,
      ...extra,
    });

  it('cancels the statement at the request deadline: the answer is partial and the backend is free', async () => {
    const service = new LogQueryService(t.store.db, storeTenancy(t.store.db), t.services.logBackends.forProvider, {
      filters: t.services.filters,
      sourceTimeoutMs: 60_000,
      deadlineMs: 200,
      concurrency: 4,
    });
    const started = performance.now();
    const result = await service.query(viewer, JSON.parse(body()) as LogQueryRequest);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(result).toMatchObject({ partial: true, missedSources: ['/heavy'] });
    await expect.poll(running, { timeout: 1_000, interval: 50 }).toBe(0);
  });

  it('without a deadline the same statement runs for seconds (the test above is not vacuous)', async () => {
    const service = new LogQueryService(t.store.db, storeTenancy(t.store.db), t.services.logBackends.forProvider, {
      filters: t.services.filters,
      sourceTimeoutMs: 60_000,
      deadlineMs: 60_000,
      concurrency: 4,
    });
    const started = performance.now();
    await service.query(viewer, JSON.parse(body()) as LogQueryRequest);
    // Twice the deadline above at least (0.8–1 s on an idle machine since one-lane slices; 1.1 s before them).
    expect(performance.now() - started).toBeGreaterThan(400);
  });

  it('cancels the statement when the client goes away', async () => {
    const gone = new AbortController();
    const pending = fetch(`${t.url}${PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.viewer}`, 'content-type': 'application/json' },
      body: body(),
      signal: gone.signal,
    }).catch(() => undefined);
    await expect.poll(running, { timeout: 2_000, interval: 20 }).toBe(1);
    const abortedAt = performance.now();
    gone.abort();
    await pending;
    await expect.poll(running, { timeout: 1_000, interval: 20 }).toBe(0);
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
  });
});
