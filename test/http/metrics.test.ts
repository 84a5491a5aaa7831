// GET /metrics names no tenant to strangers (issue 20): after traffic of two organizations that counts in the
// per-organization series (requests over the rate limit, heavy work refused, streams refused), an anonymous scrape
// has no organization label and no tenant's id anywhere; `Authorization: Bearer <METRICS_TOKEN>` gets the series per
// organization; another credential is 401; both views are valid Prometheus text; the token is never logged.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ErrorSchema } from '../../src/core/schemas/common.js';
import { loggerOptions } from '../../src/http/log-serializers.js';
import { installErrorHandling } from '../../src/http/plugins/error-handler.js';
import { installMetrics } from '../../src/http/plugins/metrics.js';
import { type Metric, PUBLIC_LABELS, publicView, renderMetrics } from '../../src/http/plugins/metrics-view.js';
import { ThrottleStats } from '../../src/http/plugins/rate-limit.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { logSource } from '../support/log-source.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, ORG_B, TOKENS } from '../support/world.js';

const METRICS_TOKEN = `metrics-${randomBytes(16).toString('hex')}`;
const QUERY = '/cloud/logs/logs-insights';
const CHEAP = '/module-categories';
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);
/** Org B's own viewer and member (the base world has one principal in org B). */
const B_VIEWER = 'berth_k-b-viewer_b-viewer-secret-00000000';
const B_MEMBER = 'berth_k-b-member_b-member-secret-00000000';
/** Every id of a tenant in the fixture: none may appear in the public view. */
const TENANT_IDS = [ORG_A, ORG_B, 'p-viewer', 'p-admin', 'p-owner', 'p-member', 'p-other', 'p-b-viewer', 'p-b-member'];
const TENANT_IDS_TOO = ['acc-a', 'acc-b', 'mi-a', 'mi-b', 'k-viewer', 'k-other', 'k-b-viewer'];

function fixture(): Record<string, unknown> {
  const event = (cloudAccountId: string, logGroup: string) => ({
    cloudAccountId,
    region: 'us-east-1',
    logGroup,
    logStream: 's/1',
    timestamp: T0,
    message: 'INFO hello',
  });
  return mergeWorld(baseWorld(), {
    principals: [
      {
        id: 'p-b-viewer',
        name: 'B viewer',
        memberships: [{ organizationId: ORG_B, role: 'viewer' }],
        apiKeys: [{ id: 'k-b-viewer', token: B_VIEWER, organizationId: ORG_B }],
      },
      {
        id: 'p-b-member',
        name: 'B member',
        memberships: [{ organizationId: ORG_B, role: 'member' }],
        apiKeys: [{ id: 'k-b-member', token: B_MEMBER, organizationId: ORG_B }],
      },
    ],
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
      { id: 'mi-a', environmentId: 'env-a', name: 'a', logSources: [logSource('app', 'acc-a', '/a')] },
      { id: 'mi-b', environmentId: 'env-b', name: 'b', logSources: [logSource('app', 'acc-b', '/b')] },
    ],
    logEvents: [event('acc-a', '/a'), event('acc-b', '/b')],
  });
}

// ---------------------------------------------------------------- the Prometheus text format

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/y;

/**
 * Parses text exposition format 0.0.4 strictly: HELP then TYPE once per family, samples of the family just typed
 * (histograms: _bucket, _sum, _count), well-formed labels and values, no series twice, histogram buckets
 * cumulative and ending in +Inf equal to _count. Fails the test on any departure; answers the samples.
 */
function parseExposition(text: string): Sample[] {
  expect(text.endsWith('\n')).toBe(true);
  const samples: Sample[] = [];
  const families = new Set<string>();
  const series = new Set<string>();
  let family: { name: string; type: string } | undefined;
  let help: string | undefined;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const name = line.slice(7).split(' ', 1)[0]!;
      expect(name, line).toMatch(METRIC_NAME);
      expect(families.has(name), `${name} described twice`).toBe(false);
      help = name;
      family = undefined;
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type, ...rest] = line.slice(7).split(' ');
      expect(rest, line).toEqual([]);
      expect(name, `TYPE of ${name} follows its HELP`).toBe(help);
      expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(type);
      families.add(name!);
      family = { name: name!, type: type! };
      continue;
    }
    expect(line.startsWith('#'), `unexpected comment: ${line}`).toBe(false);
    expect(family, `sample before its TYPE: ${line}`).toBeDefined();
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, `malformed sample: ${line}`).not.toBeNull();
    const [, name, labelText = '', valueText] = m!;
    const suffixes = family!.type === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
    expect(
      suffixes.map((s) => family!.name + s),
      line,
    ).toContain(name);
    const labels: Record<string, string> = {};
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < labelText.length) {
      const l = LABEL.exec(labelText);
      expect(l, `malformed labels: ${line}`).not.toBeNull();
      expect(labels[l![1]!], `label twice: ${line}`).toBeUndefined();
      labels[l![1]!] = l![2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    expect(valueText, line).toMatch(/^(NaN|[+-]Inf|-?\d+(\.\d+)?([eE][+-]?\d+)?)$/);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    expect(series.has(key), `series twice: ${line}`).toBe(false);
    series.add(key);
    samples.push({ name: name!, labels, value: valueText === '+Inf' ? Number.POSITIVE_INFINITY : Number(valueText) });
  }
  checkHistograms(samples);
  return samples;
}

function checkHistograms(samples: Sample[]): void {
  const buckets = new Map<string, { le: number; value: number }[]>();
  const counts = new Map<string, number>();
  for (const s of samples) {
    const { le, ...rest } = s.labels;
    const key = `${s.name.replace(/_(bucket|count)$/, '')}${JSON.stringify(Object.entries(rest).sort())}`;
    if (s.name.endsWith('_bucket')) {
      const list = buckets.get(key) ?? [];
      list.push({ le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), value: s.value });
      buckets.set(key, list);
    } else if (s.name.endsWith('_count')) counts.set(key, s.value);
  }
  for (const [key, list] of buckets) {
    for (let i = 1; i < list.length; i++) {
      expect(list[i]!.le, key).toBeGreaterThan(list[i - 1]!.le);
      expect(list[i]!.value, key).toBeGreaterThanOrEqual(list[i - 1]!.value);
    }
    expect(list.at(-1)!.le, key).toBe(Number.POSITIVE_INFINITY);
    expect(list.at(-1)!.value, key).toBe(counts.get(key));
  }
}

const sumOf = (samples: Sample[], name: string, where: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

// ---------------------------------------------------------------- over HTTP, on the real app

describe('GET /metrics with METRICS_TOKEN set, after traffic of two organizations', () => {
  let t: TestApp;
  const open: SseReader[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      fixture: fixture(),
      config: {
        METRICS_TOKEN,
        RATE_LIMIT_MAX: 3,
        RATE_LIMIT_WINDOW_MS: 600_000,
        HEAVY_MAX_PER_PRINCIPAL: 1,
        HEAVY_QUEUE_MS: 0,
        STREAM_MAX_PER_ORG: 1,
        STREAM_KEEPALIVE_MS: 200,
      },
    });

    // Requests over the rate limit: one refused in each organization.
    for (const token of [TOKENS.viewer, B_VIEWER]) {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await t.request('GET', CHEAP, { token })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    }

    // Heavy work refused: the principal's one slot is taken, and HEAVY_QUEUE_MS is 0.
    for (const [organizationId, principalId, token, moduleInstanceId] of [
      [ORG_A, 'p-admin', TOKENS.admin, 'mi-a'],
      [ORG_B, 'p-other', TOKENS.otherAdmin, 'mi-b'],
    ] as const) {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const hold = t.services.heavy.run({ organizationId, principalId }, {}, () => {
        started();
        return held;
      });
      await running;
      const res = await t.request('POST', QUERY, {
        token,
        body: { startTime: T0 - 1, endTime: T0 + 1, moduleInstanceIds: [moduleInstanceId] },
      });
      expectError(res, 429, 'http:request:rate-limited');
      release();
      await hold;
    }

    // Streams refused: one stream per organization at most.
    const params = (accountId: string, logGroups: string) => ({
      accountId,
      logGroups,
      logStreamPrefix: 's',
      tail: true,
    });
    for (const [first, second, accountId, group] of [
      [TOKENS.owner, TOKENS.member, 'acc-a', '/a'],
      [TOKENS.otherAdmin, B_MEMBER, 'acc-b', '/b'],
    ] as const) {
      const reader = await openSse(t.url, first, params(accountId, group));
      expect(reader.res.status).toBe(200);
      open.push(reader);
      const refused = await t.request(
        'GET',
        `/cloud/logs/stream?accountId=${accountId}&logGroups=${group}&logStreamPrefix=s&tail=true`,
        { token: second },
      );
      expectError(refused, 429, 'logs:stream:too-many-streams');
    }
  }, 120_000);

  afterAll(async () => {
    for (const r of open) r.close();
    await t?.close();
  });

  it('serves anonymous callers no organization label and no tenant id, only totals', async () => {
    const res = await t.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text).not.toContain('organization=');
    for (const id of [...TENANT_IDS, ...TENANT_IDS_TOO]) expect(res.text, id).not.toContain(id);
    const samples = parseExposition(res.text);
    for (const s of samples) {
      if (/^(nodejs|process)_/.test(s.name)) continue;
      for (const label of Object.keys(s.labels)) expect(PUBLIC_LABELS.has(label), `${s.name}{${label}}`).toBe(true);
    }
    // Every per-organization figure is there, summed.
    expect(sumOf(samples, 'berth_rate_limited_total', { reason: 'principal' })).toBe(2);
    expect(samples.filter((s) => s.name === 'berth_rate_limited_total')).toEqual([
      { name: 'berth_rate_limited_total', labels: { reason: 'principal' }, value: 2 },
    ]);
    expect(samples.filter((s) => s.name === 'berth_heavy_work_throttled_total')).toEqual([
      { name: 'berth_heavy_work_throttled_total', labels: {}, value: 2 },
    ]);
    expect(sumOf(samples, 'berth_heavy_work_queued_total')).toBeGreaterThanOrEqual(2);
    expect(samples.filter((s) => s.name === 'berth_log_streams_refused_total')).toEqual([
      { name: 'berth_log_streams_refused_total', labels: {}, value: 2 },
    ]);
    // Requests by operation are process-wide figures, served as they are.
    expect(sumOf(samples, 'berth_http_request_duration_seconds_count', { operation: 'listModuleCategories' })).toBe(8);
    expect(res.text).toMatch(/^# HELP berth_log_streams_refused_total .*summed over organization/m);
  });

  it('serves the series per organization with the metrics token', async () => {
    const res = await t.request('GET', '/metrics', { token: METRICS_TOKEN });
    expect(res.status).toBe(200);
    const samples = parseExposition(res.text);
    for (const organization of [ORG_A, ORG_B]) {
      expect(sumOf(samples, 'berth_rate_limited_total', { organization, reason: 'principal' })).toBe(1);
      expect(sumOf(samples, 'berth_heavy_work_throttled_total', { organization })).toBe(1);
      expect(sumOf(samples, 'berth_log_streams_refused_total', { organization })).toBe(1);
    }
    expect(res.text).toContain(`berth_heavy_work_throttled_total{organization="${ORG_A}"} 1`);
    expect(res.text).toContain(`berth_log_streams_refused_total{organization="${ORG_B}"} 1`);
    // The same totals as the public view.
    expect(sumOf(samples, 'berth_log_streams_refused_total')).toBe(2);
  });

  it('answers any other credential 401 auth:token:invalid, so a misconfigured scraper notices', async () => {
    const wrong = [
      `Bearer ${METRICS_TOKEN.slice(0, -1)}x`,
      `Bearer ${METRICS_TOKEN}x`,
      `Bearer ${METRICS_TOKEN.toUpperCase()}`,
      `Bearer ${TOKENS.owner}`,
      `Basic ${Buffer.from(`metrics:${METRICS_TOKEN}`).toString('base64')}`,
      METRICS_TOKEN,
      'Bearer',
    ];
    for (const authorization of wrong) {
      const res = await t.request('GET', '/metrics', { headers: { authorization } });
      expectError(res, 401, 'auth:token:invalid');
      expect(res.text, authorization).not.toContain('organization=');
      expect(res.text).not.toContain(METRICS_TOKEN);
    }
    // The scheme is case-insensitive and surrounding blanks are allowed, as on every route.
    const lower = await t.request('GET', '/metrics', { headers: { authorization: `bearer  ${METRICS_TOKEN} ` } });
    expect(lower.status).toBe(200);
    expect(lower.text).toContain('organization=');
  });

  it('refuses two Authorization headers, even when one is the token', async () => {
    const { request } = await import('node:http');
    const url = new URL(`${t.url}/metrics`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: [
          ['host', url.host],
          ['authorization', `Bearer ${METRICS_TOKEN}`],
          ['authorization', 'Bearer other-token-0000000000'],
        ].flat(),
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body).code).toBe('auth:token:invalid');
  });
});

// ---------------------------------------------------------------- the plugin alone

/** A bare app with the metrics plugin and the error handler, logging everything to `lines`. */
async function bareApp(metricsToken: string, lines: string[] = []) {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = Fastify({ logger: { ...loggerOptions('trace'), stream } });
  app.addSchema(ErrorSchema);
  installErrorHandling(app, []);
  const throttled = new ThrottleStats();
  throttled.count('principal', ORG_A);
  throttled.count('principal', ORG_B);
  throttled.count('failed-auth');
  installMetrics(app, undefined, undefined, throttled, undefined, { metricsToken });
  await app.ready();
  return app;
}

describe('GET /metrics without METRICS_TOKEN', () => {
  it('never serves per-organization series, and ignores any credential', async () => {
    const app = await bareApp('');
    try {
      for (const authorization of [undefined, `Bearer ${METRICS_TOKEN}`, `Bearer ${TOKENS.owner}`, 'Basic eA==']) {
        const res = await app.inject({
          method: 'GET',
          url: '/metrics',
          headers: authorization ? { authorization } : {},
        });
        expect(res.statusCode).toBe(200);
        expect(res.body).not.toContain('organization=');
        expect(res.body).not.toContain(ORG_A);
        const samples = parseExposition(res.body);
        const limited = samples.filter((s) => s.name === 'berth_rate_limited_total');
        expect(limited).toHaveLength(2);
        expect(limited).toContainEqual({ name: 'berth_rate_limited_total', labels: { reason: 'principal' }, value: 2 });
        expect(limited).toContainEqual({
          name: 'berth_rate_limited_total',
          labels: { reason: 'failed-auth' },
          value: 1,
        });
      }
    } finally {
      await app.close();
    }
  });
});

describe('the metrics token is never written', () => {
  it('is not in the log at trace level, whether it is right or wrong', async () => {
    const lines: string[] = [];
    const app = await bareApp(METRICS_TOKEN, lines);
    try {
      const right = await app.inject({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      expect(right.statusCode).toBe(200);
      expect(right.body).toContain(`organization="${ORG_A}"`);
      const wrong = await app.inject({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${METRICS_TOKEN.slice(1)}` },
      });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json().code).toBe('auth:token:invalid');
    } finally {
      await app.close();
    }
    expect(lines.length).toBeGreaterThan(0);
    const log = lines.join('');
    expect(log).toContain('request rejected');
    expect(log).not.toContain(METRICS_TOKEN);
    expect(log).not.toContain(METRICS_TOKEN.slice(1));
  });

  it('is not echoed by a configuration error', () => {
    const bad = 'too-short-42';
    let error: unknown;
    try {
      loadConfig({ METRICS_TOKEN: bad });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('METRICS_TOKEN');
    expect((error as Error).message).not.toContain(bad);
    expect(() => loadConfig({ METRICS_TOKEN: 'with a space in it, long enough' })).toThrow(ConfigError);
    expect(loadConfig({ METRICS_TOKEN }).METRICS_TOKEN).toBe(METRICS_TOKEN);
    expect(loadConfig({}).METRICS_TOKEN).toBe('');
  });
});

// ---------------------------------------------------------------- the public view, pure

describe('publicView', () => {
  /** A collected metric as `Registry.getMetricsAsJSON()` answers it. */
  const metric = (name: string, type: string, help: string, values: unknown[]): Metric =>
    ({ name, help, type, aggregator: 'sum', collect: () => undefined, values }) as unknown as Metric;
  const histogram = metric('berth_example_seconds', 'histogram', 'An example, by organization and operation', [
    ...[
      [ORG_A, 1, 2, 0.5],
      [ORG_B, 0, 3, 4],
    ].flatMap(([organization, b1, n, sum]) => [
      { metricName: 'berth_example_seconds_bucket', labels: { le: 1, organization, operation: 'op' }, value: b1 },
      { metricName: 'berth_example_seconds_bucket', labels: { le: '+Inf', organization, operation: 'op' }, value: n },
      { metricName: 'berth_example_seconds_sum', labels: { organization, operation: 'op' }, value: sum },
      { metricName: 'berth_example_seconds_count', labels: { organization, operation: 'op' }, value: n },
    ]),
  ]);
  const gauge = (name: string, values: unknown[], help = 'g') => metric(name, 'gauge', help, values);

  it('sums the series over every label not known to be public, histograms included', () => {
    const text = renderMetrics(publicView([histogram]));
    expect(text).toBe(
      [
        '# HELP berth_example_seconds An example, by organization and operation (summed over organization; per-tenant series need METRICS_TOKEN)',
        '# TYPE berth_example_seconds histogram',
        'berth_example_seconds_bucket{le="1",operation="op"} 1',
        'berth_example_seconds_bucket{le="+Inf",operation="op"} 5',
        'berth_example_seconds_sum{operation="op"} 4.5',
        'berth_example_seconds_count{operation="op"} 5',
        '',
      ].join('\n'),
    );
    parseExposition(text);
  });

  it('removes labels it does not know (default deny), keeps the process metrics as they are', () => {
    const metrics = [
      gauge('berth_future', [
        { labels: { principal: 'p-1', state: 'idle' }, value: 1 },
        { labels: { principal: 'p-2', state: 'idle' }, value: 2 },
        { labels: { account: 'acc-1', state: 'all' }, value: 4 },
      ]),
      gauge('nodejs_heap_space_size_used_bytes', [
        { labels: { space: 'new' }, value: 1 },
        { labels: { space: 'old' }, value: 2 },
      ]),
    ];
    const text = renderMetrics(publicView(metrics));
    expect(text).toContain('berth_future{state="idle"} 3\nberth_future{state="all"} 4\n');
    expect(text).toContain('summed over account, principal;');
    expect(text).toContain(
      'nodejs_heap_space_size_used_bytes{space="new"} 1\nnodejs_heap_space_size_used_bytes{space="old"} 2',
    );
    expect(text).not.toMatch(/p-1|p-2|acc-1/);
  });

  it('escapes help and label values, and writes special values as Prometheus does', () => {
    const text = renderMetrics([
      gauge(
        'berth_odd',
        [
          { labels: { reason: 'a"b\\c\nd' }, value: Number.NaN },
          { labels: { reason: 'inf' }, value: Number.POSITIVE_INFINITY },
          { labels: { reason: '-inf' }, value: Number.NEGATIVE_INFINITY },
          { labels: { reason: 'small' }, value: 1e-7 },
        ],
        'back\\slash\nnewline',
      ),
    ]);
    expect(text).toBe(
      [
        '# HELP berth_odd back\\\\slash\\nnewline',
        '# TYPE berth_odd gauge',
        'berth_odd{reason="a\\"b\\\\c\\nd"} NaN',
        'berth_odd{reason="inf"} +Inf',
        'berth_odd{reason="-inf"} -Inf',
        'berth_odd{reason="small"} 1e-7',
        '',
      ].join('\n'),
    );
    parseExposition(text);
  });
});
