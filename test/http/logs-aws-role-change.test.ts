// An `aws` cloud account whose role changes while Berth runs, black-box over HTTP against the fake AWS endpoint:
// the log query (Insights) and the log stream (FilterLogEvents) are signed for the new role and external id from
// the next request on, never with credentials kept from the old ones.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { logSource } from '../support/log-source.js';
import { expectLogsInsightsOk, LOGS_INSIGHTS_PATH } from '../support/logs-insights-api.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const ROLE_A = 'arn:aws:iam::210987654321:role/berth-a';
const ROLE_B = 'arn:aws:iam::210987654321:role/berth-b';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

let t: TestApp;
let aws: FakeAws;

beforeAll(async () => {
  aws = await startFakeAws();
  t = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [
        {
          id: 'acc-aws',
          organizationId: ORG_A,
          provider: 'aws',
          region: 'us-east-1',
          endpoint: aws.endpoint,
          roleArn: ROLE_A,
          externalId: 'ext-a',
        },
      ],
      projects: [{ id: 'proj-a', organizationId: ORG_A, name: 'A' }],
      environments: [{ id: 'env-a', projectId: 'proj-a', name: 'a' }],
      moduleInstances: [
        { id: 'mi-aws', environmentId: 'env-a', name: 'aws', logSources: [logSource('app', 'acc-aws', '/aws/app')] },
      ],
    }),
    config: { INSIGHTS_POLL_INTERVAL_MS: 10 },
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(3, 5) } },
      }),
  });
  aws.logs.putLogEvents('/aws/app', 'app/1', [{ timestamp: T0, message: 'INFO hello' }]);
});
afterAll(async () => {
  await t?.close();
  expect(aws?.unexpectedErrors).toEqual([]);
  await aws?.close();
});
beforeEach(async () => {
  aws.clearCalls();
  await setRole(ROLE_A, 'ext-a');
});

/**
 * Changes the account's role below the API, then waits until the change has reached the caches (as a write through
 * the API does before it answers): the notification is asynchronous, and a loaded machine can deliver it late.
 */
const setRole = async (roleArn: string, externalId: string) => {
  await t.store.db
    .updateTable('cloud_accounts')
    .set({ role_arn: roleArn, external_id: externalId })
    .where('id', '=', 'acc-aws')
    .execute();
  await t.services.caches.settle();
};

/** The role and external id of the STS grant each call of `op` was signed with. */
const signedFor = (op: string) =>
  aws.callsTo(op).map((c) => {
    const grant = aws.sts.credentialsFor(c.accessKeyId);
    return grant === undefined ? c.accessKeyId : [grant.roleArn, grant.externalId];
  });

describe('an aws account whose role changes', () => {
  it('has its next log query signed for the new role, then for the new external id', async () => {
    const query = async () => {
      const body = expectLogsInsightsOk(
        await t.request('POST', LOGS_INSIGHTS_PATH, {
          token: TOKENS.viewer,
          body: { startTime: '2024-01-15T11:00:00Z', endTime: '2024-01-15T13:00:00Z', logSourceKeys: ['mi-aws::app'] },
        }),
      );
      expect(body.rows.map((r) => r.message)).toEqual(['INFO hello']);
    };
    await query();
    await setRole(ROLE_B, 'ext-a');
    await query();
    await setRole(ROLE_B, 'ext-b');
    await query();
    expect(signedFor('StartQuery')).toEqual([
      [ROLE_A, 'ext-a'],
      [ROLE_B, 'ext-a'],
      [ROLE_B, 'ext-b'],
    ]);
  });

  it('has its next log stream signed for the new role, then for the new external id', async () => {
    const stream = async () => {
      const s = await openSse(t.url, TOKENS.owner, {
        accountId: 'acc-aws',
        logGroups: '/aws/app',
        logStreamPrefix: 'app/',
        startTime: new Date(T0 - 1_000).toISOString(),
        endTime: new Date(T0 + 1_000).toISOString(),
      });
      try {
        expect(s.res.status).toBe(200);
        expect((await s.events(1)).map((e) => e.message)).toEqual(['INFO hello']);
      } finally {
        s.close();
      }
    };
    await stream();
    await setRole(ROLE_B, 'ext-a');
    await stream();
    await setRole(ROLE_B, 'ext-b');
    await stream();
    expect([...new Set(signedFor('FilterLogEvents').map((x) => JSON.stringify(x)))]).toEqual([
      JSON.stringify([ROLE_A, 'ext-a']),
      JSON.stringify([ROLE_B, 'ext-a']),
      JSON.stringify([ROLE_B, 'ext-b']),
    ]);
  });
});
