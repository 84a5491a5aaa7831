// PostgreSQL outages, black-box: Berth reaches its database through a TCP proxy the test breaks
// (refused, blackholed, partitioned, cut in the middle of a statement) and mends.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { startDbProxy, type DbProxy } from './support/db-proxy.js';
import {
  categoryBody,
  createCategory,
  dbWorld,
  expectUnavailable,
  ingest,
  ingestBody,
  logQuery,
  serving,
  timed,
  waitUntil,
} from './support/db-world.js';
import { FULL, recordSummary } from './support/summary.js';

/** Berth's server-side statement limit here; the client gives up 2 s after it (src/store/db.ts). */
const STATEMENT_TIMEOUT_MS = 3_000;
/** Connect timeout (5 s) or statement limit + margin (5 s), plus slack for a loaded 2-core machine. */
const HANG_BOUND_MS = 9_000;
/** /readyz pings with a 2 s limit. */
const READY_BOUND_MS = 4_000;
/** A refused connection fails at once. */
const REFUSED_BOUND_MS = 2_000;
/** After the database is back, Berth serves again within this, without a restart. */
const RECOVERY_BOUND_MS = 5_000;

let berth: Berth;
let proxy: DbProxy;
let pid: number;

/** The requests a database outage must answer with 503: each needs the database (authentication first). */
const outageRequests = (tag: string) => [
  { name: 'GET /module-categories', send: () => berth.request('GET', '/module-categories', { token: TOKENS.viewer }) },
  { name: 'POST /module-categories', send: () => createCategory(berth, `outage-${tag}`) },
  { name: 'POST /cloud/logs/logs-insights', send: () => logQuery(berth, 0, Date.now()) },
  { name: 'POST /cloud/logs/local/events', send: () => ingest(berth, ingestBody(`outage-${tag}`, 3, Date.now())) },
  {
    name: 'GET permitted-identity-providers',
    send: () => berth.request('GET', '/organizations/org-a/permitted-identity-providers', { token: TOKENS.owner }),
  },
];

async function expectAllUnavailable(tag: string, boundMs: number): Promise<number> {
  const answers = await Promise.all(
    outageRequests(tag).map(async (r) => ({ name: r.name, ...(await timed(r.send())) })),
  );
  for (const a of answers) {
    expectUnavailable(a.value);
    expect(a.ms, `${a.name} answered in ${a.ms} ms`).toBeLessThan(boundMs);
  }
  return Math.max(...answers.map((a) => a.ms));
}

async function expectNotReady(boundMs: number): Promise<number> {
  const { value, ms } = await timed(berth.request('GET', '/readyz'));
  expectUnavailable(value);
  expect(ms).toBeLessThan(boundMs);
  // Liveness is not readiness: the process is up and says so.
  expect((await berth.request('GET', '/healthz')).status).toBe(200);
  return ms;
}

/** Berth still runs, the same process; its output tells why if not. */
function expectAlive(): void {
  const child = berth.server.child;
  expect(
    child.exitCode === null && child.signalCode === null,
    `Berth exited:\n${berth.server.output().slice(-4000)}`,
  ).toBe(true);
  expect(child.pid).toBe(pid);
}

async function expectRecovery(): Promise<number> {
  expectAlive();
  await proxy.restore();
  const ms = await waitUntil(
    () => serving(berth),
    RECOVERY_BOUND_MS,
    'Berth serving again after the database came back',
  );
  expectAlive();
  return ms;
}

describe.skipIf(!onPostgres)('PostgreSQL faults', () => {
  beforeAll(async () => {
    berth = await startBerth({
      fixture: dbWorld(),
      database: 'postgres',
      env: { DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) },
      viaUrl: async (url) => {
        const u = new URL(url);
        proxy = await startDbProxy({ host: u.hostname, port: Number(u.port || 5432) });
        return proxy.via(url);
      },
    });
    pid = berth.server.child.pid!;
  });
  afterAll(async () => {
    await berth?.close();
    await proxy?.close();
  });
  afterEach(async () => {
    // Each test leaves the database reachable and Berth serving, whatever happened.
    expectAlive();
    await proxy.restore();
    await waitUntil(() => serving(berth), 15_000, 'serving between tests');
  });

  it('answers 503 without internals at once while PostgreSQL refuses connections, and serves again within seconds of its return', async () => {
    expect(await serving(berth)).toBe(true);
    const rounds = FULL ? 3 : 1;
    for (let round = 0; round < rounds; round++) {
      await proxy.cut('refuse');
      const slowest = await expectAllUnavailable(`refused-${round}`, REFUSED_BOUND_MS);
      const ready = await expectNotReady(REFUSED_BOUND_MS);
      const recovered = await expectRecovery();
      recordSummary({
        area: 'faults',
        check: `PostgreSQL refused (idle cut), round ${round + 1}`,
        result: `503 in ≤ ${slowest} ms, /readyz 503 in ${ready} ms, serving again ${recovered} ms after restore`,
        ok: true,
      });
    }
  }, 60_000);

  it('answers 503 within the connect timeout while PostgreSQL is a black hole, and /readyz does not hang', async () => {
    await proxy.cut('blackhole');
    const [slowest, ready] = await Promise.all([
      expectAllUnavailable('blackhole', HANG_BOUND_MS),
      expectNotReady(READY_BOUND_MS),
    ]);
    const recovered = await expectRecovery();
    recordSummary({
      area: 'faults',
      check: 'PostgreSQL blackholed (connections hang)',
      result: `503 in ≤ ${slowest} ms (bound ${HANG_BOUND_MS}), /readyz 503 in ${ready} ms, serving again ${recovered} ms after restore`,
      ok: true,
    });
  });

  it('answers 503 within the statement bound when the network to PostgreSQL stalls with connections open, and resumes', async () => {
    // Open connections in the pool first, so some requests wait on a connection that went silent.
    await Promise.all(
      Array.from({ length: 6 }, () => berth.request('GET', '/module-categories', { token: TOKENS.viewer })),
    );
    proxy.stall();
    const [slowest, ready] = await Promise.all([
      expectAllUnavailable('stall', HANG_BOUND_MS),
      expectNotReady(READY_BOUND_MS),
    ]);
    const recovered = await expectRecovery();
    recordSummary({
      area: 'faults',
      check: 'PostgreSQL partitioned (open connections stall)',
      result: `503 in ≤ ${slowest} ms (bound ${HANG_BOUND_MS}), /readyz 503 in ${ready} ms, serving again ${recovered} ms after restore`,
      ok: true,
    });
  });

  const midRequest = [
    {
      what: 'token authentication',
      statement: 'from "api_keys"',
      // A token Berth has not seen yet: one it has seen may be answered from its cache, without the database.
      send: () => berth.request('GET', '/module-categories', { token: TOKENS.member }),
    },
    {
      what: 'a category create',
      statement: 'insert into "module_categories"',
      send: () => createCategory(berth, 'mid-create'),
    },
    {
      what: 'a log ingest',
      statement: 'insert into log_events',
      send: () => ingest(berth, ingestBody('mid-ingest', 5, Date.now())),
    },
  ];
  it.each(midRequest)(
    'answers 503 when PostgreSQL is cut in the middle of $what, and the retried request succeeds',
    async ({ what, statement, send }) => {
      const cut = proxy.cutOn(statement);
      const { value, ms } = await timed(
        send().catch((error: unknown) => {
          expectAlive();
          throw error;
        }),
      );
      await cut;
      expectUnavailable(value);
      const recovered = await expectRecovery();
      // The statement never reached PostgreSQL: nothing was written, so the retry is not a duplicate.
      const retry = await send();
      expect(retry.status, retry.text).toBeLessThan(300);
      recordSummary({
        area: 'faults',
        check: `PostgreSQL cut mid-request (${what})`,
        result: `503 in ${ms} ms, retry ${retry.status} ${recovered} ms after restore`,
        ok: true,
      });
    },
  );

  it('answers a log query cut in the middle of its statement with 503 (an outage of Berth, not a missed source)', async () => {
    await ingest(berth, ingestBody('before-cut', 3, Date.now() - 1_000));
    const cut = proxy.cutOn('from log_events');
    const res = await logQuery(berth, 0, Date.now() + 60_000);
    await cut;
    // Berth's own database failing is not "a source that could not be queried": 503, retry.
    expectUnavailable(res);
    await expectRecovery();
    const again = await logQuery(berth, 0, Date.now() + 60_000);
    expect(again.status).toBe(200);
    expect(again.body.partial).toBe(false);
    expect((again.body.rows as { message: string }[]).some((r) => r.message.startsWith('before-cut'))).toBe(true);
    recordSummary({
      area: 'faults',
      check: 'PostgreSQL cut mid-request (log query)',
      result: `${res.status} internal:server:unavailable; retried query complete`,
      ok: true,
    });
  });

  it('shows the database error only to a superadmin', async () => {
    const cut = proxy.cutOn('insert into "module_categories"');
    const res = await berth.request('POST', '/module-categories', {
      token: TOKENS.superadmin,
      body: categoryBody('root-cut'),
    });
    await cut;
    expectUnavailable(res, { superadmin: true });
    expect(res.body.description).toMatch(/^The database is unavailable: /);
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it(
    'keeps serving through repeated cuts under concurrent traffic, every answer a success or a 503',
    async () => {
      const cuts = FULL ? 10 : 3;
      let stop = false;
      const statuses = new Map<number, number>();
      const bad: string[] = [];
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const res =
            i % 2 === 0
              ? await createCategory(berth, `churn-${w}-${i}`)
              : await berth.request('GET', '/module-categories', { token: TOKENS.viewer });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 300) {
            try {
              expectUnavailable(res);
            } catch {
              bad.push(`${res.status} ${res.text.slice(0, 200)}`);
            }
          }
        }
      };
      const workers = Array.from({ length: 4 }, (_, w) => worker(w));
      for (let c = 0; c < cuts; c++) {
        await new Promise((r) => setTimeout(r, 300));
        await proxy.cut(c % 2 === 0 ? 'refuse' : 'blackhole');
        await new Promise((r) => setTimeout(r, 300));
        await proxy.restore();
      }
      await waitUntil(() => serving(berth), RECOVERY_BOUND_MS, 'serving after the last cut');
      stop = true;
      await Promise.all(workers);
      expect(bad).toEqual([]);
      expect(berth.server.child.exitCode).toBeNull();
      const summary = [...statuses]
        .sort()
        .map(([s, n]) => `${n}×${s}`)
        .join(', ');
      recordSummary({
        area: 'faults',
        check: `PostgreSQL cut ${cuts} times under 4 concurrent clients`,
        result: summary,
        ok: true,
      });
    },
    FULL ? 300_000 : 60_000,
  );
});
