// The Logs Insights query limit is per AWS account and region for the whole cluster: two replicas querying two Berth
// cloud accounts that are one AWS account share it (through the database), and two AWS accounts do not.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CloudAccount, LogTarget } from '../../src/core/log-query/types.js';
import type { AwsClients } from '../../src/providers/aws/clients.js';
import { InsightsLogBackend } from '../../src/providers/aws/log-query/backend.js';
import { AwsQuotas } from '../../src/providers/aws/quotas.js';
import { AwsQuotaStore } from '../../src/store/aws-quotas.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { defaultQueryHandler, type FakeAws } from '../support/fake-aws/index.js';
import { startFakeAwsClients, stopFakeAwsClients } from '../support/fake-aws-clients.js';

const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const LIMIT = 2;

let fake: FakeAws;
let clients: AwsClients;
let database: TestDatabase;
let store: Store;
let maxRunning = 0;
const opened: AwsQuotas[] = [];

beforeAll(async () => {
  ({ aws: fake, clients } = await startFakeAwsClients());
  database = await createTestDatabase();
  store = await openStore(database.target);
  await migrate(store);
  fake.logs.putLogEvents('/app/a', 'web', [{ timestamp: T0, message: 'INFO from a' }]);
  fake.logs.putLogEvents('/app/b', 'web', [{ timestamp: T0, message: 'INFO from b' }]);
  // Each query stays running for a few polls, so queries overlap.
  fake.logs.options.queryPollsBeforeFinal = 4;
  fake.logs.options.queryHandler = (query, ctx) => {
    maxRunning = Math.max(maxRunning, fake.logs.runningQueries().length + 1);
    return defaultQueryHandler(query, ctx);
  };
});
afterEach(async () => {
  for (const quotas of opened.splice(0)) await quotas.close();
  maxRunning = 0;
  fake.clearCalls();
});
afterAll(async () => {
  await stopFakeAwsClients(fake, clients);
  await store.close();
  await database.drop();
});

const account = (id: string): CloudAccount => ({
  id,
  organizationId: 'org-1',
  provider: 'aws',
  region: 'us-east-1',
  roleArn: null,
  externalId: null,
  endpoint: fake.endpoint,
});

const target = (acc: CloudAccount, logGroup: string): LogTarget => ({
  account: acc,
  region: 'us-east-1',
  logGroup,
  streams: { kind: 'all' },
  sourceId: '',
  logSourceId: '',
});

/** One replica: its own quota objects on the shared database, and its own Insights backend. */
function replica(awsAccountIdOf?: (account: CloudAccount) => Promise<string>): InsightsLogBackend {
  const quotas = new AwsQuotas(new AwsQuotaStore(store.db), {
    insightsMaxConcurrent: LIMIT,
    leaseTtlMs: 5_000,
    ...(awsAccountIdOf === undefined ? {} : { awsAccountIdOf }),
  });
  opened.push(quotas);
  // The per-process limit is above the shared one: only the shared one can hold these queries back.
  return new InsightsLogBackend({
    aws: clients,
    maxGroupsPerQuery: 50,
    maxConcurrentQueries: 10,
    pollIntervalMs: 20,
    quotas,
  });
}

async function queryBoth(one: InsightsLogBackend, two: InsightsLogBackend): Promise<string[]> {
  const a = account('acct-a');
  const b = account('acct-b');
  const fetch = (backend: InsightsLogBackend, t: LogTarget) =>
    backend.fetch({
      targets: [t],
      window: { startMs: T0 - 60_000, endMs: T0 + 60_000 },
      filter: { kind: 'all' },
      limit: 100,
      signal: AbortSignal.timeout(20_000),
    });
  const results = await Promise.all([
    ...Array.from({ length: 3 }, () => fetch(one, target(a, '/app/a'))),
    ...Array.from({ length: 3 }, () => fetch(two, target(b, '/app/b'))),
  ]);
  return results.map((r) => r.rows.map((row) => row.message).join());
}

describe('Logs Insights query slots shared through the database', () => {
  it('holds two cloud accounts that are one AWS account, on two replicas, to one limit', async () => {
    const sameAwsAccount = async () => '111122223333';
    const messages = await queryBoth(replica(sameAwsAccount), replica(sameAwsAccount));
    expect(messages).toEqual([...Array(3).fill('INFO from a'), ...Array(3).fill('INFO from b')]);
    expect(fake.callsTo('StartQuery').every((c) => c.status === 200)).toBe(true);
    expect(maxRunning).toBe(LIMIT);
    // Every slot was given back.
    expect(await new AwsQuotaStore(store.db).count('logs-insights:111122223333/us-east-1')).toBe(0);
  });

  it('gives two AWS accounts a limit each', async () => {
    // Default: the cloud account's own id stands for its AWS account.
    const messages = await queryBoth(replica(), replica());
    expect(messages).toHaveLength(6);
    expect(maxRunning).toBeGreaterThan(LIMIT);
    expect(maxRunning).toBeLessThanOrEqual(2 * LIMIT);
  });
});

describe('Live Tail sessions shared through the database', () => {
  it('waits until the sessions asked for are free together, on another replica too', async () => {
    const sameAwsAccount = async () => '111122223333';
    const limits = { liveTailMaxSessions: 3, leaseTtlMs: 5_000, awsAccountIdOf: sameAwsAccount };
    const one = new AwsQuotas(new AwsQuotaStore(store.db), limits);
    const two = new AwsQuotas(new AwsQuotaStore(store.db), limits);
    opened.push(one, two);
    const key = 'live-tail:111122223333/us-east-1';
    const counter = new AwsQuotaStore(store.db);

    const releaseOne = await one.liveTailSessions(account('acct-a'), 'us-east-1', 2, AbortSignal.timeout(5_000));
    expect(await counter.count(key)).toBe(2);
    let granted = false;
    const pending = two
      .liveTailSessions(account('acct-b'), 'us-east-1', 2, AbortSignal.timeout(5_000))
      .then((release) => {
        granted = true;
        return release;
      });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(granted).toBe(false);
    releaseOne();
    const releaseTwo = await pending;
    // Two's sessions, and perhaps one of one's still being given back: never more than the limit.
    expect(await counter.count(key)).toBeGreaterThanOrEqual(2);
    expect(await counter.count(key)).toBeLessThanOrEqual(3);
    releaseTwo();
    await vi.waitFor(async () => expect(await counter.count(key)).toBe(0));
    await expect(two.liveTailSessions(account('acct-b'), 'us-east-1', 4, AbortSignal.timeout(1_000))).rejects.toThrow(
      RangeError,
    );
  });
});
