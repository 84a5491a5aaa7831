import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' },
        { id: 'aws-a', organizationId: 'org-a', provider: 'aws', region: 'eu-west-1' },
        { id: 'local-b', organizationId: 'org-b', provider: 'local', region: 'us-east-1' },
      ],
      projects: [{ id: 'p', organizationId: 'org-a', name: 'P' }],
      environments: [{ id: 'e', projectId: 'p', name: 'prod' }],
      moduleInstances: [
        {
          id: 'mi',
          environmentId: 'e',
          name: 'svc',
          logSources: [{ id: 'app', kind: 'ui.logs', cloudAccountId: 'local-a', region: 'eu-west-1', logGroup: 'in' }],
        },
      ],
    }),
  });
});
afterAll(async () => t.close());

const body = (over: Record<string, unknown> = {}) => ({
  accountId: 'local-a',
  region: 'eu-west-1',
  logGroup: 'in',
  logStream: 's',
  events: [{ message: 'hello' }],
  ...over,
});
const ingest = (token: string | undefined, b: unknown) =>
  t.request('POST', '/cloud/logs/local/events', { token, body: b });
const rows = async () =>
  (
    await t.request('POST', '/cloud/logs/logs-insights', {
      token: TOKENS.viewer,
      body: { startTime: 0, endTime: Date.now() + 60_000, moduleInstanceIds: ['mi'], complete: true },
    })
  ).body.rows as {
    message: string;
    timestamp: number;
    level: string;
  }[];

describe('POST /cloud/logs/local/events', () => {
  it('accepts events for admins and owners with 202 {data: {accepted}}, and they are queryable', async () => {
    const res = await ingest(
      TOKENS.admin,
      body({
        events: [
          { message: 'ERROR one', timestamp: 1_700_000_000_000 },
          { message: '{"level":"warn","x":1}', timestamp: '2023-11-14T22:13:20.500Z' },
          { message: 'no time given' },
        ],
      }),
    );
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ data: { accepted: 3 } });
    expect((await ingest(TOKENS.owner, body())).status).toBe(202);
    const got = await rows();
    expect(got.find((r) => r.message === 'ERROR one')).toMatchObject({ timestamp: 1_700_000_000_000, level: 'ERROR' });
    expect(got.find((r) => r.message.startsWith('{'))).toMatchObject({ timestamp: 1_700_000_000_500, level: 'WARN' });
    expect(Math.abs(got.find((r) => r.message === 'no time given')!.timestamp - Date.now())).toBeLessThan(60_000);
  });

  it('keeps a NUL character visible as U+FFFD instead of failing', async () => {
    expect((await ingest(TOKENS.admin, body({ events: [{ message: 'nul\u0000here' }] }))).status).toBe(202);
    expect((await rows()).some((r) => r.message === 'nul\ufffdhere')).toBe(true);
  });

  it('refuses members and viewers with 403', async () => {
    expectError(await ingest(TOKENS.viewer, body()), 403, 'auth:permission:denied');
    expectError(await ingest(TOKENS.member, body()), 403, 'auth:permission:denied');
  });

  it("answers another organization's account like a missing one", async () => {
    expectError(await ingest(TOKENS.admin, body({ accountId: 'local-b' })), 404, 'logs:account:not-found');
    expectError(await ingest(TOKENS.admin, body({ accountId: 'nope' })), 404, 'logs:account:not-found');
    expectError(await ingest(TOKENS.otherAdmin, body()), 404, 'logs:account:not-found');
  });

  it('refuses an aws account with 422', async () => {
    expectError(await ingest(TOKENS.admin, body({ accountId: 'aws-a' })), 422, 'logs:account:not-local');
  });

  it('rejects bad bodies with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [body({ events: Array.from({ length: 10_001 }, () => ({ message: 'x' })) }), 'body.events'],
      [body({ events: [{ message: 'x', timestamp: 'yesterday' }] }), 'body.events[0].timestamp'],
      [body({ events: [{ message: 5 }] }), 'body.events[0].message'],
      [body({ events: [{ message: 'x', level: 'INFO' }] }), 'body.events[0].level'],
      [body({ logGroup: '' }), 'body.logGroup'],
      [body({ extra: true }), 'body.extra'],
      [{ accountId: 'local-a' }, 'body.region'],
    ];
    for (const [b, field] of cases) {
      const res = await ingest(TOKENS.admin, b);
      expectError(res, res.status === 413 ? 413 : 400);
      if (res.status === 400)
        expect(
          res.body.details[0].items.some((i: string) => i.startsWith(field)),
          `${field}: ${res.text}`,
        ).toBe(true);
    }
  });

  it('answers 401 without a valid token', async () => {
    expectError(await ingest(undefined, body()), 401, 'auth:token:missing');
    expectError(await ingest(TOKENS.revoked, body()), 401, 'auth:token:invalid');
  });
});
