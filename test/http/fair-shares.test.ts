// Fair shares of heavy work and of streams (docs/decisions.md "Fair shares", docs/design.md#fairness-and-limits),
// black-box over HTTP on a real app: a tenant over its share gets 429 http:request:rate-limited /
// logs:stream:too-many-streams with Retry-After, another tenant is served meanwhile, and the figures show per
// organization in /metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { logSource } from '../support/log-source.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const QUERY = '/cloud/logs/logs-insights';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
const EVENTS = 3_000;

function fixture(): Record<string, unknown> {
  const events = Array.from({ length: EVENTS }, (_, i) => ({
    cloudAccountId: 'acc-a',
    region: 'us-east-1',
    logGroup: '/big',
    logStream: `s/${i % 7}`,
    timestamp: T0 + i,
    message: `INFO request ${i} served in ${i % 97} ms`,
  }));
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
      { id: 'env-a', projectId: 'proj-a', name: 'production' },
      { id: 'env-b', projectId: 'proj-b', name: 'production' },
    ],
    moduleInstances: [
      { id: 'mi-a', environmentId: 'env-a', name: 'big', logSources: [logSource('app', 'acc-a', '/big')] },
      { id: 'mi-b', environmentId: 'env-b', name: 'small', logSources: [logSource('app', 'acc-b', '/small')] },
    ],
    logEvents: [
      ...events,
      {
        cloudAccountId: 'acc-b',
        region: 'us-east-1',
        logGroup: '/small',
        logStream: 's',
        timestamp: T0,
        message: 'hi',
      },
    ],
  });
}

const window = { startTime: T0 - 1, endTime: T0 + EVENTS + 1 };
/** Per-organization series of /metrics are served with this token only (test/http/metrics.test.ts). */
const METRICS_TOKEN = 'fair-shares-metrics-token';
const withMetricsToken = { headers: { authorization: `Bearer ${METRICS_TOKEN}` } };

describe('fair shares of heavy work', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      fixture: fixture(),
      config: {
        HEAVY_MAX: 3,
        HEAVY_MAX_PER_ORG: 2,
        HEAVY_MAX_PER_PRINCIPAL: 1,
        HEAVY_QUEUE_MS: 0,
        STREAM_MAX_PER_PRINCIPAL: 10,
        STREAM_MAX_PER_ORG: 2,
        STREAM_MAX_TOTAL: 3,
        STREAM_KEEPALIVE_MS: 200,
        METRICS_TOKEN,
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 429 with Retry-After to heavy work over the principal share, and serves another tenant meanwhile', async () => {
    const heavy = Array.from({ length: 6 }, () =>
      t.request('POST', QUERY, {
        token: TOKENS.owner,
        body: {
          ...window,
          moduleInstanceIds: ['mi-a'],
          complete: true,
          filter: { kind: 'text', op: 'regex', value: 'no such (thing|text)$' },
        },
      }),
    );
    const other = t.request('POST', QUERY, {
      token: TOKENS.otherAdmin,
      body: { ...window, moduleInstanceIds: ['mi-b'], limit: 10 },
    });
    const answers = await Promise.all(heavy);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);
    for (const r of answers.filter((a) => a.status === 429)) {
      expectError(r, 429, 'http:request:rate-limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    const b = await other;
    expect(b.status).toBe(200);
    expect(b.body.rows).toHaveLength(1);
    const metrics = await (await fetch(`${t.url}/metrics`, withMetricsToken)).text();
    expect(metrics).toMatch(new RegExp(`berth_heavy_work_throttled_total\\{organization="${ORG_A}"\\} [1-9]`));
    expect(metrics).not.toMatch(new RegExp(`berth_heavy_work_throttled_total\\{organization="${ORG_B}"\\} [1-9]`));
  });

  it('refuses a stream over its organization share or the process share before it starts', async () => {
    const params = (account: string, group: string) => ({
      accountId: account,
      logGroups: group,
      logStreamPrefix: 's',
      tail: true,
    });
    const open: SseReader[] = [];
    try {
      open.push(await openSse(t.url, TOKENS.owner, params('acc-a', '/big')));
      open.push(await openSse(t.url, TOKENS.admin, params('acc-a', '/big')));
      // A third principal of org A: the organization's share (2) is full.
      const third = await t.request(
        'GET',
        `/cloud/logs/stream?accountId=acc-a&logGroups=/big&logStreamPrefix=s&tail=true`,
        {
          token: TOKENS.member,
        },
      );
      expectError(third, 429, 'logs:stream:too-many-streams');
      expect(third.body.message).toBeTypeOf('string');
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
      // Org B still has room in the process (3).
      open.push(await openSse(t.url, TOKENS.otherAdmin, params('acc-b', '/small')));
      const fourth = await t.request(
        'GET',
        `/cloud/logs/stream?accountId=acc-b&logGroups=/small&logStreamPrefix=s&tail=true`,
        {
          token: TOKENS.multiOrg,
        },
      );
      expectError(fourth, 429, 'logs:stream:too-many-streams');
      const metrics = await (await fetch(`${t.url}/metrics`, withMetricsToken)).text();
      expect(metrics).toMatch(new RegExp(`berth_log_streams_refused_total\\{organization="${ORG_A}"\\} 1`));
      expect(metrics).toMatch(new RegExp(`berth_log_streams_refused_total\\{organization="${ORG_B}"\\} 1`));
    } finally {
      for (const r of open) r.close();
    }
  });
});
