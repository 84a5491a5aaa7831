// Ingest that cannot hurt others (issue 11): a per-organization quota of stored local events (the oldest go
// first, never another tenant's), a retention window by the time Berth stored an event, chunked writes.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture } from '../../src/fixtures/load.js';
import { countOrganizationEvents, deleteExpiredEvents, insertLocalEvents } from '../../src/store/log-ingest/events.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { expectLogsInsightsOk, LOGS_INSIGHTS_PATH } from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const QUOTA = 50;
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

/** Org A has two local accounts (its quota spans both), org B one; each a module instance reading them. */
function world(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'local-a1', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' },
      { id: 'local-a2', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' },
      { id: 'local-b', organizationId: ORG_B, provider: 'local', region: 'eu-west-1' },
    ],
    projects: [
      { id: 'pa', organizationId: ORG_A, name: 'A' },
      { id: 'pb', organizationId: ORG_B, name: 'B' },
    ],
    environments: [
      { id: 'ea', projectId: 'pa', name: 'prod' },
      { id: 'eb', projectId: 'pb', name: 'prod' },
    ],
    moduleInstances: [
      {
        id: 'mi-a',
        environmentId: 'ea',
        name: 'svc',
        logSources: [
          { id: 'one', kind: 'ui.logs', cloudAccountId: 'local-a1', region: 'eu-west-1', logGroup: 'g' },
          { id: 'two', kind: 'ui.logs', cloudAccountId: 'local-a2', region: 'eu-west-1', logGroup: 'g' },
        ],
      },
      {
        id: 'mi-b',
        environmentId: 'eb',
        name: 'svc',
        logSources: [{ id: 'one', kind: 'ui.logs', cloudAccountId: 'local-b', region: 'eu-west-1', logGroup: 'g' }],
      },
    ],
  });
}

type Event = { message: string; timestamp?: number | string };

const ingest = (t: TestApp, token: string, accountId: string, events: Event[], logStream = 's') =>
  t.request('POST', '/cloud/logs/local/events', {
    token,
    body: { accountId, region: 'eu-west-1', logGroup: 'g', logStream, events },
  });

const series = (prefix: string, n: number, firstTs: number): Event[] =>
  Array.from({ length: n }, (_, i) => ({ message: `${prefix}-${i}`, timestamp: firstTs + i }));

/** Every stored event of the module instance, by message (newest first, as the API answers). */
async function messages(t: TestApp, token: string, moduleInstanceId: string): Promise<string[]> {
  const res = await t.request('POST', LOGS_INSIGHTS_PATH, {
    token,
    body: { startTime: 0, endTime: Date.now() + 60_000, moduleInstanceIds: [moduleInstanceId], limit: 10_000 },
  });
  return expectLogsInsightsOk(res).rows.map((r) => r.message);
}

/** The counters agree with the rows, account by account (whoever wrote or deleted them). */
async function expectCountersExact(t: TestApp): Promise<void> {
  const rows = await sql<{ id: string; counted: number; stored: number }>`select a.id,
      coalesce((select sum(events) from log_event_counts c where c.cloud_account_id = a.id), 0)
        + coalesce((select sum(events) from log_event_count_changes c where c.cloud_account_id = a.id), 0) as counted,
      (select count(*) from log_events e where e.cloud_account_id = a.id) as stored
    from cloud_accounts a order by a.id`.execute(t.store.db);
  for (const r of rows.rows) expect(Number(r.counted), `counter of ${r.id}`).toBe(Number(r.stored));
}

describe('per-organization quota of stored local events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { INGEST_MAX_EVENTS_PER_ORG: QUOTA } });
  });
  afterAll(async () => t.close());

  it("deletes the organization's oldest events (by timestamp, across its accounts) to make room", async () => {
    expect((await ingest(t, TOKENS.admin, 'local-a1', series('a1', 30, T0))).status).toBe(202);
    expect((await ingest(t, TOKENS.admin, 'local-a2', series('a2', 30, T0 + 15))).status).toBe(202);
    // 60 stored past a quota of 50: the 10 oldest go, all of them in local-a1 (a1-0 … a1-9, at T0 … T0+9).
    const kept = await messages(t, TOKENS.viewer, 'mi-a');
    expect(kept).toHaveLength(QUOTA);
    expect(kept.filter((m) => m.startsWith('a1-'))).toHaveLength(20);
    expect(kept).not.toContain('a1-9');
    expect(kept).toContain('a1-10');
    expect(kept.filter((m) => m.startsWith('a2-'))).toHaveLength(30);
    expect(await countOrganizationEvents(t.store.db, ORG_A)).toBe(QUOTA);
    await expectCountersExact(t);
  });

  it('keeps the newest events of a request larger than the quota, ties broken by position in the request', async () => {
    // All at one timestamp, newer than anything stored: the 50 last of the request are the newest events.
    const same = Array.from({ length: 120 }, (_, i) => ({ message: `tie-${i}`, timestamp: T0 + 1_000 }));
    expect((await ingest(t, TOKENS.admin, 'local-a2', same)).status).toBe(202);
    const kept = await messages(t, TOKENS.viewer, 'mi-a');
    expect(kept.sort()).toEqual(Array.from({ length: QUOTA }, (_, i) => `tie-${i + 70}`).sort());
    await expectCountersExact(t);
  });

  it('deletes events older than everything stored at once when the organization is full', async () => {
    expect((await ingest(t, TOKENS.admin, 'local-a1', series('ancient', 5, T0 - 1_000_000))).status).toBe(202);
    const kept = await messages(t, TOKENS.viewer, 'mi-a');
    expect(kept).toHaveLength(QUOTA);
    expect(kept.some((m) => m.startsWith('ancient'))).toBe(false);
  });

  it("never deletes another organization's events, however far over its quota a tenant writes", async () => {
    expect((await ingest(t, TOKENS.otherAdmin, 'local-b', series('b', 40, T0 - 5_000_000))).status).toBe(202);
    // Org B's events are the oldest in the database; org A writes 4 × its quota.
    for (let i = 0; i < 4; i++) {
      expect(
        (await ingest(t, TOKENS.admin, 'local-a1', series(`flood${i}`, QUOTA, T0 + 10_000 * (i + 1)))).status,
      ).toBe(202);
    }
    const b = await messages(t, TOKENS.otherAdmin, 'mi-b');
    expect(b.sort()).toEqual(
      series('b', 40, 0)
        .map((e) => e.message)
        .sort(),
    );
    const a = await messages(t, TOKENS.viewer, 'mi-a');
    expect(a.sort()).toEqual(
      series('flood3', QUOTA, 0)
        .map((e) => e.message)
        .sort(),
    );
    expect(await countOrganizationEvents(t.store.db, ORG_B)).toBe(40);
    await expectCountersExact(t);
  });

  it('keeps the counters exact for events written by `berth seed`, deleted with their account, or truncated', async () => {
    await loadFixture(t.store.db, {
      cloudAccounts: [{ id: 'local-b2', organizationId: ORG_B, provider: 'local', region: 'eu-west-1' }],
      logEvents: Array.from({ length: 30 }, (_, i) => ({
        cloudAccountId: 'local-b2',
        region: 'eu-west-1',
        logGroup: 'g',
        logStream: 's',
        timestamp: T0 + i,
        message: `seeded-${i}`,
      })),
    });
    await expectCountersExact(t);
    // Loaded by `berth seed`, org B is past its quota (70): the sweep trims its oldest.
    expect(await countOrganizationEvents(t.store.db, ORG_B)).toBe(70);
    const swept = await t.services.ingest.sweep();
    expect(swept.trimmed).toBe(20);
    // The changes the triggers appended were folded into the totals by the sweep.
    expect(swept.folded).toBeGreaterThan(0);
    const changes = await sql<{ n: number }>`select count(*) as n from log_event_count_changes`.execute(t.store.db);
    expect(Number(changes.rows[0]!.n)).toBe(0);
    expect(await countOrganizationEvents(t.store.db, ORG_B)).toBe(QUOTA);
    const b = await messages(t, TOKENS.otherAdmin, 'mi-b');
    expect(b).toHaveLength(20); // of org B's original 40 (its oldest), the 20 newest remain in local-b
    expect(b.sort()).toEqual(
      series('b', 40, 0)
        .slice(20)
        .map((e) => e.message)
        .sort(),
    );
    await expectCountersExact(t);

    await sql`delete from cloud_accounts where id = 'local-b2'`.execute(t.store.db);
    expect(await countOrganizationEvents(t.store.db, ORG_B)).toBe(20);
    await expectCountersExact(t);
    await sql`delete from log_events where cloud_account_id = 'local-b' and message like 'b-2%'`.execute(t.store.db);
    await expectCountersExact(t);
    await sql`truncate log_events`.execute(t.store.db);
    expect(await countOrganizationEvents(t.store.db, ORG_A)).toBe(0);
    await expectCountersExact(t);
  });

  it('holds under concurrent requests of one tenant on both its accounts, with a sweep running', async () => {
    const requests = Array.from({ length: 6 }, (_, i) =>
      ingest(t, TOKENS.admin, i % 2 === 0 ? 'local-a1' : 'local-a2', series(`c${i}`, 40, T0 + 50_000_000 + i * 100)),
    );
    const [answers] = await Promise.all([Promise.all(requests), t.services.ingest.sweep()]);
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(202));
    // Whatever the interleaving, the 50 newest of the 240 remain: c5's 40 and the 10 newest of c4.
    const kept = await messages(t, TOKENS.viewer, 'mi-a');
    expect(kept.sort()).toEqual(
      [...series('c4', 40, 0).slice(30), ...series('c5', 40, 0)].map((e) => e.message).sort(),
    );
    await expectCountersExact(t);
  }, 60_000);

  it.runIf(onPostgres)(
    'is not held up by a long transaction writing events of the same account',
    async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let written!: () => void;
      const inside = new Promise<void>((resolve) => {
        written = resolve;
      });
      const long = t.store.db.transaction().execute(async (trx) => {
        await insertLocalEvents(
          trx,
          series('held', 5, T0 - 1_000_000_000).map((e) => ({
            cloudAccountId: 'local-a1',
            region: 'eu-west-1',
            logGroup: 'g',
            logStream: 'held',
            timestamp: e.timestamp as number,
            message: e.message,
          })),
        );
        written();
        await held;
      });
      await inside;
      try {
        const answer = await Promise.race([
          ingest(t, TOKENS.admin, 'local-a1', series('beside', 5, T0 + 60_000_000)),
          new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 15_000)),
        ]);
        expect(answer === 'timeout' ? answer : answer.status).toBe(202);
      } finally {
        release();
        await long;
      }
      await expectCountersExact(t);
    },
    60_000,
  );

  it('holds the quota through a request at the size limit, written in several chunks', async () => {
    const res = await ingest(t, TOKENS.admin, 'local-a1', series('big', 10_000, T0 + 100_000_000));
    expect(res.status).toBe(202);
    const kept = await messages(t, TOKENS.viewer, 'mi-a');
    expect(kept.sort()).toEqual(
      series('big', 10_000, 0)
        .slice(-QUOTA)
        .map((e) => e.message)
        .sort(),
    );
    await expectCountersExact(t);
  }, 60_000);
});

describe('no quota', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { INGEST_MAX_EVENTS_PER_ORG: 0 } });
  });
  afterAll(async () => t.close());

  it('INGEST_MAX_EVENTS_PER_ORG=0 deletes nothing', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await ingest(t, TOKENS.admin, 'local-a1', series(`n${i}`, 100, T0 + 1_000 * i))).status).toBe(202);
    }
    expect(await messages(t, TOKENS.viewer, 'mi-a')).toHaveLength(300);
    expect((await t.services.ingest.sweep()).trimmed).toBe(0);
    await expectCountersExact(t);
  });

  it('writes a request at the size limit in several transactions (chunks of about DB_SLICE_MS)', async () => {
    const events = series('big', 10_000, T0 + 100_000_000);
    const big = await t.request('POST', '/cloud/logs/local/events', {
      token: TOKENS.admin,
      body: { accountId: 'local-a1', region: 'eu-west-1', logGroup: 'g', logStream: 'big', events },
    });
    expect(big.status).toBe(202);
    expect(big.body).toEqual({ data: { accepted: 10_000 } });
    // Each chunk commits on its own: the transaction id of each row tells them apart.
    const chunks = await sql<{ n: number }>`select count(distinct xid) as n from log_events
      where cloud_account_id = 'local-a1' and log_stream = 'big'`.execute(t.store.db);
    expect(Number(chunks.rows[0]!.n)).toBeGreaterThan(1);
    expect(Number(chunks.rows[0]!.n)).toBeLessThan(10_000 / 50 + 1);
    expect(await countOrganizationEvents(t.store.db, ORG_A)).toBe(10_300);
    await expectCountersExact(t);
  }, 60_000);
});

describe('retention window', () => {
  const fixtureEvents = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      cloudAccountId: 'local-b',
      region: 'eu-west-1',
      logGroup: 'g',
      logStream: 'fixture',
      // Old timestamps, and ingestion times as old (a fixture without ingestionTime gets its timestamp).
      timestamp: Date.UTC(2020, 0, 1) + i,
      message: `fixture-${i}`,
    }));

  describe('of an hour', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({
        fixture: mergeWorld(world(), { logEvents: fixtureEvents(10) }),
        config: { INGEST_RETENTION_MS: 3_600_000 },
      });
    });
    afterAll(async () => t.close());

    it('counts from the time Berth stored an event, not its (fixture-given) ingestion time', async () => {
      expect(await t.services.ingest.sweep()).toMatchObject({ expired: 0 });
      expect(await messages(t, TOKENS.otherAdmin, 'mi-b')).toHaveLength(10);
    });

    it('deletes in bounded chunks, each its own transaction, until a chunk finds nothing expired', async () => {
      // Stored "in 1970", after the fixture's events (so behind young rows in storage order).
      await sql`insert into log_events (cloud_account_id, region, log_group, log_stream, timestamp, ingestion_time,
          event_id, message, level, stored_at)
        select 'local-a1', 'eu-west-1', 'g', 's', ${T0}::bigint + i, 0, 'e' || i, 'm' || i, 'INFO', 0
        from generate_series(1, 5000) i`.execute(t.store.db);
      const chunks = [];
      for (let i = 0; i < 4; i++) chunks.push(await deleteExpiredEvents(t.store.db, 3_600_000, 2_000));
      expect(chunks).toEqual([
        { deleted: 1_990, more: true },
        { deleted: 1_990, more: true },
        { deleted: 1_020, more: false },
        { deleted: 0, more: false },
      ]);
      expect(await messages(t, TOKENS.otherAdmin, 'mi-b')).toHaveLength(10);
      await expectCountersExact(t);
    });
  });

  describe('of a few seconds', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({
        fixture: mergeWorld(world(), { logEvents: fixtureEvents(10) }),
        config: { INGEST_RETENTION_MS: 4_000 },
      });
    });
    afterAll(async () => t.close());

    it('is applied by the periodic sweep, with no call from anyone', async () => {
      const loaded = Date.now();
      const res = await ingest(t, TOKENS.otherAdmin, 'local-b', series('old-ts', 5, Date.UTC(2019, 0, 1)));
      expect(res.status).toBe(202);
      const before = await messages(t, TOKENS.otherAdmin, 'mi-b');
      // Loaded and ingested just now: kept, whatever their timestamps (unless this machine took 4 s to get here).
      if (Date.now() - loaded < 3_000) expect(before).toHaveLength(15);
      let left = before.length;
      while (left > 0 && Date.now() - loaded < 30_000) {
        await new Promise((r) => setTimeout(r, 250));
        left = (await messages(t, TOKENS.otherAdmin, 'mi-b')).length;
      }
      expect(left).toBe(0);
      await expectCountersExact(t);
    }, 60_000);
  });
});
