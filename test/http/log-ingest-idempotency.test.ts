// The ingest route's Idempotency-Key (issue 11): a retried batch is stored once, on any replica.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimIdempotencyKey } from '../../src/store/log-ingest/idempotency.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { expectLogsInsightsOk, LOGS_INSIGHTS_PATH } from '../support/logs-insights-api.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

function world(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'local-a', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' },
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
        logSources: [{ id: 'one', kind: 'ui.logs', cloudAccountId: 'local-a', region: 'eu-west-1', logGroup: 'g' }],
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

function post(t: TestApp, token: string, key: string | undefined, events: Event[], over: Record<string, unknown> = {}) {
  return t.request('POST', '/cloud/logs/local/events', {
    token,
    headers: key === undefined ? {} : { 'idempotency-key': key },
    body: { accountId: 'local-a', region: 'eu-west-1', logGroup: 'g', logStream: 's', events, ...over },
  });
}

async function messages(t: TestApp, token: string, moduleInstanceId: string): Promise<string[]> {
  const res = await t.request('POST', LOGS_INSIGHTS_PATH, {
    token,
    body: { startTime: 0, endTime: Date.now() + 60_000, moduleInstanceIds: [moduleInstanceId], limit: 10_000 },
  });
  return expectLogsInsightsOk(res).rows.map((r) => r.message);
}

const count = (list: string[], prefix: string) => list.filter((m) => m.startsWith(prefix)).length;
const batch = (prefix: string, n: number, withTime = true): Event[] =>
  Array.from({ length: n }, (_, i) =>
    withTime ? { message: `${prefix}-${i}`, timestamp: T0 + i } : { message: `${prefix}-${i}` },
  );

describe('Idempotency-Key on POST /cloud/logs/local/events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world() });
  });
  afterAll(async () => t.close());

  it('answers a retry with the first answer and stores nothing more', async () => {
    const first = await post(t, TOKENS.admin, 'retry-1', batch('r1', 3));
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ data: { accepted: 3 } });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same request again (another caller of the organization may retry it too), same body with equal times written
    // the other way: the same answer, marked as a replay.
    const again = await post(t, TOKENS.owner, 'retry-1', batch('r1', 3));
    const iso = await post(
      t,
      TOKENS.admin,
      'retry-1',
      batch('r1', 3).map((e) => ({ ...e, timestamp: new Date(e.timestamp as number).toISOString() })),
    );
    for (const res of [again, iso]) {
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ data: { accepted: 3 } });
      expect(res.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(count(await messages(t, TOKENS.viewer, 'mi-a'), 'r1-')).toBe(3);
  });

  it('refuses the same key with a different request with 422 and stores nothing', async () => {
    expect((await post(t, TOKENS.admin, 'retry-2', batch('r2', 2))).status).toBe(202);
    const cases: [Event[], Record<string, unknown>][] = [
      [batch('r2', 3), {}], // one more event
      [batch('other', 2), {}], // other messages
      [batch('r2', 2).map((e) => ({ ...e, timestamp: (e.timestamp as number) + 1 })), {}], // other times
      [batch('r2', 2), { logStream: 'other' }], // another stream
    ];
    for (const [events, over] of cases) {
      const res = await post(t, TOKENS.admin, 'retry-2', events, over);
      expectError(res, 422, 'logs:ingest:idempotency-key-reused');
    }
    const stored = await messages(t, TOKENS.viewer, 'mi-a');
    expect(count(stored, 'r2-')).toBe(2);
    expect(count(stored, 'other-')).toBe(0);
  });

  it("keeps keys per organization: two tenants' equal keys never collide", async () => {
    expect((await post(t, TOKENS.admin, 'shared-key', batch('tenant-a', 2))).status).toBe(202);
    const b = await post(t, TOKENS.otherAdmin, 'shared-key', batch('tenant-b', 4), { accountId: 'local-b' });
    expect(b.status).toBe(202);
    expect(b.body).toEqual({ data: { accepted: 4 } });
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(count(await messages(t, TOKENS.otherAdmin, 'mi-b'), 'tenant-b-')).toBe(4);
    expect(count(await messages(t, TOKENS.viewer, 'mi-a'), 'tenant-a-')).toBe(2);
  });

  it('checks access before the key: no replay for a caller who may not write, no key spent on a refusal', async () => {
    expect((await post(t, TOKENS.admin, 'guarded', batch('g', 1))).status).toBe(202);
    expectError(await post(t, TOKENS.viewer, 'guarded', batch('g', 1)), 403, 'auth:permission:denied');
    expectError(await post(t, TOKENS.otherAdmin, 'guarded', batch('g', 1)), 404, 'logs:account:not-found');
    // Refused requests claim nothing: the key is still free for a first use.
    expectError(await post(t, TOKENS.viewer, 'unspent', batch('u', 1)), 403, 'auth:permission:denied');
    expectError(await post(t, TOKENS.admin, 'unspent', batch('u', 1), { accountId: 'nope' }), 404);
    const res = await post(t, TOKENS.admin, 'unspent', batch('u', 1));
    expect(res.status).toBe(202);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses a malformed key with 400 naming the header', async () => {
    const bad = ['', ' ', 'x'.repeat(256), 'tab\there', 'caf\u00e9'];
    for (const key of bad) {
      const res = await post(t, TOKENS.admin, key, batch('bad', 1));
      expectError(res, 400, 'validation:request:invalid-headers');
      expect(
        res.body.details[0].items.some((i: string) => i.startsWith('header.idempotency-key')),
        res.text,
      ).toBe(true);
    }
    expect((await post(t, TOKENS.admin, 'k'.repeat(255), batch('long', 1))).status).toBe(202);
    expect((await post(t, TOKENS.admin, 'a key with spaces ~!@#$%^&*()', batch('spaces', 1))).status).toBe(202);
    expect(count(await messages(t, TOKENS.viewer, 'mi-a'), 'bad-')).toBe(0);
  });

  it('answers 409 with Retry-After while another request holds the key', async () => {
    // Another replica's request is storing this batch right now (its claim's lease is in force).
    const claim = await claimIdempotencyKey(t.store.db, {
      organizationId: ORG_A,
      key: 'busy',
      requestHash: 'hash-of-that-request',
      receivedAt: Date.now(),
      claimId: randomUUID(),
      leaseMs: 60_000,
      ttlMs: 86_400_000,
    });
    expect(claim.kind).toBe('claimed');
    // A different request with that key is 422 (the request decides first), held or not.
    expectError(await post(t, TOKENS.admin, 'busy', batch('busy', 1)), 422, 'logs:ingest:idempotency-key-reused');
    // The same request, while another attempt at it holds its claim: 409.
    const first = await post(t, TOKENS.admin, 'busy2', batch('busy2', 1));
    expect(first.status).toBe(202);
    await sql`update ingest_idempotency_keys set accepted = null, locked_until = now() + interval '1 minute'
      where key = 'busy2'`.execute(t.store.db);
    const res = await post(t, TOKENS.admin, 'busy2', batch('busy2', 1));
    expectError(res, 409, 'logs:ingest:idempotency-key-in-use');
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('stores concurrent requests with one key once: the others replay or answer 409', async () => {
    const events = batch('concurrent', 5_000);
    const answers = await Promise.all(Array.from({ length: 4 }, () => post(t, TOKENS.admin, 'concurrent', events)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    for (const a of answers) {
      if (a.status === 202) expect(a.body).toEqual({ data: { accepted: 5_000 } });
      else expectError(a, 409, 'logs:ingest:idempotency-key-in-use');
    }
    // Exactly one of them stored (the others were refused or replayed).
    expect(answers.filter((a) => a.status === 202 && a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(count(await messages(t, TOKENS.viewer, 'mi-a'), 'concurrent-')).toBe(5_000);
  }, 60_000);

  it('completes a request that failed mid-way when it is retried, without storing anything twice', async () => {
    // Events without a timestamp too: their time is the first attempt's, so their ids are the same on the retry.
    const events = [...batch('crash', 300), ...batch('crash-now', 300, false)];
    expect((await post(t, TOKENS.admin, 'crashed', events)).status).toBe(202);
    // As if the first attempt had died after committing some chunks: half the events, no answer recorded, and
    // its claim's lease run out.
    await sql`delete from log_events where message like 'crash%' and (right(message, 1))::int % 2 = 0`.execute(
      t.store.db,
    );
    await sql`update ingest_idempotency_keys set accepted = null, locked_until = now() where key = 'crashed'`.execute(
      t.store.db,
    );
    expect(count(await messages(t, TOKENS.viewer, 'mi-a'), 'crash')).toBe(300);
    const retry = await post(t, TOKENS.admin, 'crashed', events);
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual({ data: { accepted: 600 } });
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const stored = await messages(t, TOKENS.viewer, 'mi-a');
    expect(count(stored, 'crash-now-')).toBe(300);
    expect(count(stored, 'crash-')).toBe(600);
    expect(new Set(stored.filter((m) => m.startsWith('crash'))).size).toBe(600);
    // And now it is done: a third attempt replays.
    expect((await post(t, TOKENS.admin, 'crashed', events)).headers.get('idempotent-replayed')).toBe('true');
  });

  it('documents the header in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const op = doc.paths['/cloud/logs/local/events'].post;
    const header = op.parameters.find((p: { in: string; name: string }) => p.in === 'header');
    expect(header).toMatchObject({ name: 'idempotency-key', required: false });
    expect(header.schema).toMatchObject({ minLength: 1, maxLength: 255 });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['409', '422']));
  });
});

describe('Idempotency-Key expiry', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: world(), config: { INGEST_IDEMPOTENCY_TTL_MS: 1_000 } });
  });
  afterAll(async () => t.close());

  it('forgets a key after INGEST_IDEMPOTENCY_TTL_MS, and the sweep deletes it', async () => {
    expect((await post(t, TOKENS.admin, 'short-lived', batch('v1', 1))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 1_200));
    // Expired: the same key is a new request (even a different one), stored again.
    const res = await post(t, TOKENS.admin, 'short-lived', batch('v2', 2));
    expect(res.status).toBe(202);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    const stored = await messages(t, TOKENS.viewer, 'mi-a');
    expect([count(stored, 'v1-'), count(stored, 'v2-')]).toEqual([1, 2]);
    await new Promise((r) => setTimeout(r, 1_200));
    await t.services.ingest.sweep();
    const left = await sql<{ n: number }>`select count(*) as n from ingest_idempotency_keys`.execute(t.store.db);
    expect(Number(left.rows[0]!.n)).toBe(0);
  });
});
