// Log-stream clients that misbehave at the socket: one vanishes while a large history is being
// written, one stops reading. Berth keeps answering others quickly, holds no unbounded buffer,
// and gives the stream back (gauge and per-principal count) once the socket is gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { heapAfterGc, inspectorNodeOptions, inspectorUrl } from './support/load-inspector.js';
import { eventually, metric, rawStream, recordLatency, seedLocalEvents, timed } from './support/faults-world.js';
import { FULL, recordSummary } from './support/summary.js';

const MAX_STREAMS = 3;
const EVENTS = FULL ? 100_000 : 20_000;
const MESSAGE_BYTES = 1_000;
const HISTORY_BYTES = EVENTS * MESSAGE_BYTES;
const BIG = { accountId: 'acc-local', region: 'us-east-1', logGroup: '/app/big', logStream: 'web/1' };
const GAUGE = 'berth_log_streams_active';
const HEALTHZ_BOUND_MS = 1_000;
const QUERY_BOUND_MS = 2_000;

let berth: Berth;
/** Berth's inspector: memory is measured after forced garbage collections, so garbage does not count. */
let inspector: string;
const base = Date.now() - 3_600_000;

beforeAll(async () => {
  berth = await startBerth({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: 'acc-local', organizationId: ORG_A, provider: 'local', region: 'us-east-1' }],
      projects: [{ id: 'prj', organizationId: ORG_A, name: 'SSE' }],
      environments: [{ id: 'env', projectId: 'prj', name: 'production' }],
      moduleInstances: [
        {
          id: 'mi',
          environmentId: 'env',
          name: 'small',
          logSources: [
            { id: 'ls', kind: 'ui.logs', cloudAccountId: 'acc-local', region: 'us-east-1', logGroup: '/app/small' },
          ],
        },
      ],
      logEvents: Array.from({ length: 50 }, (_, i) => ({
        cloudAccountId: 'acc-local',
        region: 'us-east-1',
        logGroup: '/app/small',
        logStream: 'web/1',
        timestamp: base + i,
        message: `INFO small ${i}`,
      })),
    }),
    env: {
      STREAM_MAX_PER_PRINCIPAL: String(MAX_STREAMS),
      BODY_LIMIT_BYTES: String(8 * 1024 * 1024),
      STREAM_POLL_INTERVAL_MS: '200',
      NODE_OPTIONS: inspectorNodeOptions(),
    },
  });
  inspector = inspectorUrl(berth.server.output());
  await seedLocalEvents(berth, TOKENS.owner, BIG, EVENTS, MESSAGE_BYTES, base, 7_000_000);
}, 300_000);
afterAll(async () => berth?.close());

const bigParams = (extra: Record<string, string | boolean> = {}) => ({
  accountId: BIG.accountId,
  logGroups: BIG.logGroup,
  logStreamPrefix: 'web',
  startTime: String(base - 1),
  ...extra,
});

/** /healthz and a small log query, timed, while something else goes on. */
async function otherClients(rounds: number): Promise<{ healthz: number; query: number }> {
  let healthz = 0;
  let query = 0;
  for (let i = 0; i < rounds; i++) {
    const h = await timed(() => berth.request('GET', '/healthz'));
    expect(h.value.status).toBe(200);
    const q = await timed(() =>
      berth.request('POST', '/cloud/logs/logs-insights', {
        token: TOKENS.owner,
        body: { moduleInstanceIds: ['mi'], startTime: base - 1, endTime: Date.now(), limit: 10 },
      }),
    );
    expect(q.value.status).toBe(200);
    expect(q.value.body).toMatchObject({ partial: false, resultCount: 10 });
    healthz = Math.max(healthz, h.ms);
    query = Math.max(query, q.ms);
  }
  return { healthz, query };
}

/** Heap used plus external memory (Buffers) of the Berth process, after forced garbage collections. */
async function memory(): Promise<number> {
  const heap = await heapAfterGc(inspector);
  return heap + (await metric(berth, 'nodejs_external_memory_bytes'));
}

const gaugeBackTo = (value: number) => eventually(async () => (await metric(berth, GAUGE)) === value, 5_000);

describe('a log-stream client that vanishes mid-write', () => {
  it('leaves the stream released and the others served quickly, every time', async () => {
    const baseline = await metric(berth, GAUGE);
    const times = FULL ? 20 : 3;
    let slowest = { healthz: 0, query: 0 };
    let releaseMs = 0;
    for (let i = 0; i < times; i++) {
      const s = rawStream(berth, TOKENS.owner, bigParams());
      await s.until(256 * 1024 * (1 + (i % 4)));
      const others = otherClients(2);
      s.socket.destroy();
      const released = await timed(() => gaugeBackTo(baseline));
      expect(released.value, `the stream count went back to ${baseline}`).toBe(true);
      releaseMs = Math.max(releaseMs, released.ms);
      const o = await others;
      slowest = { healthz: Math.max(slowest.healthz, o.healthz), query: Math.max(slowest.query, o.query) };
    }
    recordLatency(`SSE client vanished mid-history ×${times}: open streams back to ${baseline}`, releaseMs, 2_000);
    recordLatency(`/healthz while SSE clients vanish mid-write`, slowest.healthz, HEALTHZ_BOUND_MS);
    recordLatency(`log query while SSE clients vanish mid-write`, slowest.query, QUERY_BOUND_MS);
  });
});

describe('a log-stream client that stops reading', () => {
  it('holds no unbounded buffer, leaves the others served quickly, and is released once gone', async () => {
    const baseline = await metric(berth, GAUGE);
    const before = await memory();
    const s = rawStream(berth, TOKENS.owner, bigParams({ tail: true }));
    try {
      await stalled(s, baseline, before);
    } finally {
      s.socket.destroy();
    }
    const released = await timed(() => gaugeBackTo(baseline));
    expect(released.value).toBe(true);
    recordLatency('SSE client that stopped reading, then vanished: open streams back', released.ms, 2_000);
  });
});

/** The stalled client's part: it stops reading; Berth keeps no buffer for it and serves the others. */
async function stalled(s: ReturnType<typeof rawStream>, baseline: number, before: number): Promise<void> {
  await s.until(64 * 1024);
  s.socket.pause();
  // New events for its tail too: a stalled subscriber must not make the server keep them for it.
  await seedLocalEvents(berth, TOKENS.owner, BIG, 2_000, MESSAGE_BYTES, Date.now(), 7_000_000);
  await new Promise((r) => setTimeout(r, 1_500));
  const others = await otherClients(5);
  expect(await metric(berth, GAUGE)).toBe(baseline + 1);
  const during = await memory();
  const received = s.received();
  // What the server wrote that the client did not take sits in socket buffers: far less than the history.
  expect(received).toBeLessThan(HISTORY_BYTES / 2);
  const growth = during - before;
  const bound = HISTORY_BYTES / 4;
  recordSummary({
    area: 'faults',
    check: `SSE client stopped reading (${(HISTORY_BYTES / 1e6).toFixed(0)} MB history + tail): server memory growth`,
    result: `${(growth / 1e6).toFixed(1)} MB (bound ${(bound / 1e6).toFixed(0)} MB); client got ${(received / 1e6).toFixed(1)} MB`,
    ok: growth < bound,
  });
  expect(growth).toBeLessThan(bound);
  recordLatency('/healthz while an SSE client stops reading', others.healthz, HEALTHZ_BOUND_MS);
  recordLatency('log query while an SSE client stops reading', others.query, QUERY_BOUND_MS);
}

describe('after the misbehaving clients', () => {
  it('the principal opens streams up to its cap again, and one more is refused', async () => {
    const baseline = await metric(berth, GAUGE);
    const small = {
      accountId: 'acc-local',
      logGroups: '/app/small',
      logStreamPrefix: 'web',
      tail: 'true',
      startTime: String(base - 1),
    };
    const open = await Promise.all(Array.from({ length: MAX_STREAMS }, () => openSse(berth.url, TOKENS.owner, small)));
    try {
      for (const s of open) expect(s.res.status).toBe(200);
      for (const s of open) expect(await s.events(50)).toHaveLength(50);
      expect(await metric(berth, GAUGE)).toBe(baseline + MAX_STREAMS);
      const refused = await berth.request('GET', `/cloud/logs/stream?${new URLSearchParams(small)}`, {
        token: TOKENS.owner,
      });
      expectError(refused, 429, 'logs:stream:too-many-streams');
    } finally {
      for (const s of open) s.close();
    }
    expect(await gaugeBackTo(baseline)).toBe(true);
  });
});
