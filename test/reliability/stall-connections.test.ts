import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { queryBody } from './support/noisy-heavy.js';
import { exchange, type Exchange } from './support/noisy-http.js';
import { latencyRow, latencyTable, type LatencyRow, type Sample } from './support/noisy-report.js';
import { noisyWorld, type NoisyWorld } from './support/noisy-world.js';
import type { FloodPlan, FloodReport } from './support/stall-flood.js';
import { FULL, recordSummary } from './support/summary.js';

/**
 * Issue 20, "No tenant can stall another": connections. An attacker with no credentials opens 4,096 sockets, sends one
 * keep-alive `GET /healthz` on each and idles, refreshing them before keep-alive ends and reconnecting those the server
 * closes. Berth runs as users run it (`berth seed`, `berth serve`, defaults but LOG_LEVEL=warn) on PGlite, or on
 * PostgreSQL with TEST_DATABASE_URL. Meanwhile another client, from another address, makes 300 sequential requests:
 * `/healthz` on a new connection each time (a newcomer must be let in), and on one keep-alive connection the
 * identity-provider route and a 10-row log query of its own organization. Every answer must be a 200 with its own
 * data, p99 under 250 ms. Twice:
 *
 * 1. the whole flood from one address (127.0.0.1): past MAX_CONNECTIONS_PER_ADDRESS its connections are refused;
 * 2. the flood spread over 20 addresses of 256 sockets (more than MAX_CONNECTIONS in all): idle connections are
 *    closed, the longest idle first, so the newcomer is still let in.
 *
 * The flood runs in a process of its own (support/stall-flood.ts) so its sockets never delay the clock timing the
 * other client. Reliability suite only (`npm run test:reliability`): with the machine shared, its figures mean little.
 */
const VICTIM = '127.0.0.2';
const REQUESTS = 300;
const P99_LIMIT_MS = 250;
const REQUEST_TIMEOUT_MS = 5_000;
/** Pause between the victim's requests: its 300 requests then span ~20 s of the flood. */
const EVERY_MS = 50;
const SOCKETS = 4_096;
/** Berth's defaults (README, Configuration). */
const MAX_CONNECTIONS = 4_096;
const MAX_CONNECTIONS_PER_ADDRESS = 256;
/** Below keep-alive's 72 s, and often enough to refresh every held connection during the victim's requests. */
const REFRESH_MS = 10_000;
const RECONNECT_MS = 1_000;
/** Sockets open at once in this test's processes at most (the flood's, Berth's of them, a few more). */
const FILES_NEEDED = 2 * (20 * MAX_CONNECTIONS_PER_ADDRESS) + 1_000;

const database = process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let berth: Berth;
let world: NoisyWorld;
/** The other client before any flood: what "fast" is on this machine, for the figures. */
let alone: LatencyRow;

interface Flood {
  ready: Promise<FloodReport>;
  stop(): Promise<FloodReport>;
  exitCode(): number | null;
}

function startFlood(plan: FloodPlan): Flood {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/reliability/support/stall-flood.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let onReady!: (r: FloodReport) => void;
  let onResult!: (r: FloodReport) => void;
  let onFailure!: (e: Error) => void;
  const ready = new Promise<FloodReport>((resolve, reject) => {
    onReady = resolve;
    child.once('exit', (code) => reject(new Error(`the flood exited with ${code} before it was ready`)));
  });
  const result = new Promise<FloodReport>((resolve, reject) => {
    onResult = resolve;
    onFailure = reject;
  });
  ready.catch(() => undefined);
  result.catch(() => undefined);
  child.on('message', (m: { ready?: FloodReport; result?: FloodReport; failed?: string }) => {
    if (m.ready) onReady(m.ready);
    if (m.result) onResult(m.result);
    if (m.failed) onFailure(new Error(`the flood failed: ${m.failed}`));
  });
  child.on('exit', (code) => onFailure(new Error(`the flood exited with ${code} before reporting`)));
  child.send({ plan });
  let stopped: Promise<FloodReport> | undefined;
  return {
    ready,
    exitCode: () => child.exitCode,
    stop: () => {
      stopped ??= (() => {
        // The child may be gone already (it failed): nothing to tell it then.
        if (child.connected) child.send({ stop: true }, () => undefined);
        return Promise.race([
          result,
          sleep(30_000).then(() => {
            child.kill('SIGKILL');
            throw new Error('the flood did not stop within 30 s');
          }),
        ]);
      })();
      return stopped;
    },
  };
}

/** Berth's connection counters, read from /metrics by the victim's address. */
async function connectionMetrics(): Promise<{ address: number; process: number; idleClosed: number; open: number }> {
  const r = await exchange(berth.url, '/metrics', { agent: newcomer(), timeoutMs: 10_000 });
  expect(r.status, r.error).toBe(200);
  const value = (pattern: RegExp) => Number(pattern.exec(r.body)?.[1] ?? Number.NaN);
  return {
    address: value(/^berth_connections_refused_total\{reason="address"\} (\d+)$/m),
    process: value(/^berth_connections_refused_total\{reason="process"\} (\d+)$/m),
    idleClosed: value(/^berth_connections_idle_closed_total (\d+)$/m),
    open: value(/^berth_connections_open\{state="all"\} (\d+)$/m),
  };
}

/** An agent that opens a new connection for each request: the victim as a newcomer. */
function newcomer(): http.Agent {
  return new http.Agent({ keepAlive: false, localAddress: VICTIM } as http.AgentOptions);
}

type Kind = 'healthz (new connection)' | 'identity providers' | 'log query (10 rows)';
const KINDS: Kind[] = ['healthz (new connection)', 'identity providers', 'log query (10 rows)'];

function victimRequest(kind: Kind, keepAlive: http.Agent): Promise<Exchange> {
  if (kind === 'healthz (new connection)')
    return exchange(berth.url, '/healthz', { agent: newcomer(), timeoutMs: REQUEST_TIMEOUT_MS });
  if (kind === 'identity providers')
    return exchange(berth.url, `/organizations/${world.b.organizationId}/permitted-identity-providers`, {
      token: world.b.token,
      agent: keepAlive,
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
  return exchange(berth.url, '/cloud/logs/logs-insights', {
    method: 'POST',
    token: world.b.token,
    agent: keepAlive,
    timeoutMs: REQUEST_TIMEOUT_MS,
    body: queryBody(
      world.b,
      { startMs: world.window.startMs, endMs: Date.now() + 60_000 },
      { environmentId: undefined, moduleInstanceIds: [world.b.moduleInstanceId], limit: 10 },
    ),
  });
}

/** What is wrong with an answer, if anything: every one must be a 200 with the victim's own data. */
function problem(kind: Kind, r: Exchange): string | undefined {
  if (r.status !== 200) return `${r.status || r.error} ${r.body.slice(0, 200)}`;
  const body = JSON.parse(r.body) as { status?: string; data?: string[]; rows?: { sourceId: string }[] };
  if (kind === 'healthz (new connection)') return body.status === 'ok' ? undefined : r.body.slice(0, 200);
  if (kind === 'identity providers') {
    const got = [...(body.data ?? [])].sort().join(',');
    return got === 'SOCIAL_1,SSO_BROKER' ? undefined : `identity providers ${got}`;
  }
  if (body.rows?.length !== 10) return `${body.rows?.length} rows`;
  return body.rows.some((row) => row.sourceId !== world.b.moduleInstanceId) ? 'rows of another source' : undefined;
}

async function runVictim(requests = REQUESTS): Promise<{ rows: LatencyRow[]; all: LatencyRow; problems: string[] }> {
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: VICTIM } as http.AgentOptions);
  const samples = new Map<Kind, Sample[]>(KINDS.map((k) => [k, []]));
  const problems: string[] = [];
  for (let i = 0; i < requests; i++) {
    const kind = KINDS[i % KINDS.length]!;
    const r = await victimRequest(kind, keepAlive);
    samples.get(kind)!.push({ ms: r.ms, status: r.status });
    const p = problem(kind, r);
    if (p !== undefined) problems.push(`request ${i} (${kind}): ${p}`);
    await sleep(EVERY_MS);
  }
  keepAlive.destroy();
  return {
    rows: KINDS.map((k) => latencyRow(k, samples.get(k)!)),
    all: latencyRow('all', [...samples.values()].flat()),
    problems,
  };
}

interface Phase {
  name: string;
  addresses: string[];
}

const PHASES: Phase[] = [
  { name: `${SOCKETS.toLocaleString('en')} sockets from one address`, addresses: ['127.0.0.1'] },
  {
    name: `${(20 * MAX_CONNECTIONS_PER_ADDRESS).toLocaleString('en')} sockets from 20 addresses`,
    addresses: Array.from({ length: 20 }, (_, i) => `127.0.1.${i + 1}`),
  },
];

describe.runIf(FULL)('a connection flood', () => {
  beforeAll(async () => {
    const limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
    if (Number.isFinite(limit) && limit < FILES_NEEDED)
      throw new Error(`ulimit -n is ${limit}: this test needs at least ${FILES_NEEDED} open files`);
    world = noisyWorld(300, Date.now());
    berth = await startBerth({ fixture: world.fixture });
    const quiet = await runVictim(60);
    expect(quiet.problems, 'the other client alone').toEqual([]);
    alone = { ...quiet.all, name: 'all, before any flood' };
  }, 180_000);

  afterAll(async () => {
    await berth?.close();
  });

  it.each(PHASES)(
    '$name leaves another client served, p99 under 250 ms, every answer a 200',
    async (phase) => {
      const perAddress = phase.addresses.length === 1 ? SOCKETS : MAX_CONNECTIONS_PER_ADDRESS;
      const before = await connectionMetrics();
      const flood = startFlood({
        url: berth.url,
        addresses: phase.addresses,
        perAddress,
        refreshMs: REFRESH_MS,
        reconnectMs: RECONNECT_MS,
      });
      let victim: Awaited<ReturnType<typeof runVictim>>;
      let ready: FloodReport;
      let during: Awaited<ReturnType<typeof connectionMetrics>>;
      let report: FloodReport;
      const started = performance.now();
      try {
        ready = await Promise.race([
          flood.ready,
          sleep(120_000).then(() => {
            throw new Error('the flood had not opened its sockets within 120 s');
          }),
        ]);
        const floodSeconds = (performance.now() - started) / 1000;
        victim = await runVictim();
        during = await connectionMetrics();
        report = await flood.stop();
        recordFigures(phase, { ready, report, before, during, floodSeconds, victim });
      } finally {
        await flood.stop().catch(() => undefined);
      }
      const after = await exchange(berth.url, '/healthz', { agent: newcomer(), timeoutMs: 5_000 });

      const refusedAddress = during.address - before.address;
      const idleClosed = during.idleClosed - before.idleClosed;
      expect({
        victimProblems: victim.problems,
        victimP99UnderLimit: victim.all.p99 < P99_LIMIT_MS,
        // The flood got honest treatment: answered 200, or closed; never another answer, never a crash.
        floodStatuses: Object.keys(report.statuses),
        floodServed: report.maxHeld > 0,
        aliveAfter: after.status,
        berthRunning: berth.server.child.exitCode,
      }).toEqual({
        victimProblems: [],
        victimP99UnderLimit: true,
        floodStatuses: ['200'],
        floodServed: true,
        aliveAfter: 200,
        berthRunning: null,
      });
      if (phase.addresses.length === 1) {
        // At most its cap held; the rest refused as they arrived.
        expect(report.maxHeld).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_ADDRESS);
        expect(refusedAddress).toBeGreaterThanOrEqual(SOCKETS - MAX_CONNECTIONS_PER_ADDRESS);
        expect(ready.closedUnanswered).toBeGreaterThanOrEqual(SOCKETS - MAX_CONNECTIONS_PER_ADDRESS);
      } else {
        // More wanted than the process takes: idle ones were closed for newcomers, and Berth never held more.
        expect(idleClosed).toBeGreaterThan(0);
        expect(during.open).toBeLessThanOrEqual(MAX_CONNECTIONS);
        expect(report.closedAfterAnswer).toBeGreaterThan(0);
      }
    },
    400_000,
  );
});

function recordFigures(
  phase: Phase,
  f: {
    ready: FloodReport;
    report: FloodReport;
    before: Awaited<ReturnType<typeof connectionMetrics>>;
    during: Awaited<ReturnType<typeof connectionMetrics>>;
    floodSeconds: number;
    victim: Awaited<ReturnType<typeof runVictim>>;
  },
): void {
  const { report, before, during, victim } = f;
  const refused = `${(during.address - before.address).toLocaleString('en')} refused per address, ${(
    during.process - before.process
  ).toLocaleString('en')} per process, ${(during.idleClosed - before.idleClosed).toLocaleString('en')} idle closed`;
  const statuses = Object.entries(report.statuses)
    .map(([s, n]) => `${s} ×${n.toLocaleString('en')}`)
    .join(', ');
  const errors = Object.entries(report.errors)
    .map(([s, n]) => `${s} ×${n.toLocaleString('en')}`)
    .join(', ');
  const text = [
    '',
    `### Connection flood: ${phase.name} · ${database} · Node ${process.version}`,
    '',
    `- flood: all sockets tried in ${f.floodSeconds.toFixed(1)} s; ${report.connected.toLocaleString('en')} connections, at most ${report.maxHeld.toLocaleString('en')} held at once as it saw it (it learns of a close late); answers ${statuses}; closed unanswered ${report.closedUnanswered.toLocaleString('en')}, closed after an answer ${report.closedAfterAnswer.toLocaleString('en')}${errors ? `; socket errors ${errors}` : ''}`,
    `- Berth: ${refused}; ${during.open.toLocaleString('en')} connections open at the end`,
    '',
    latencyTable([alone, ...victim.rows, victim.all]),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  const all = victim.all;
  recordSummary({
    area: 'stall (issue 20)',
    check: `connection flood of ${phase.name}: another client, ${REQUESTS} sequential requests`,
    result: `p50 ${all.p50.toFixed(0)} ms, p99 ${all.p99.toFixed(0)} ms, max ${all.max.toFixed(0)} ms; ${all.statuses['200'] ?? 0} × 200`,
    ok: all.p99 < P99_LIMIT_MS && all.statuses['200'] === REQUESTS,
  });
  recordSummary({
    area: 'stall (issue 20)',
    check: `connection flood of ${phase.name}: what Berth refused or closed`,
    result: `${refused}; the flood held at most ${report.maxHeld.toLocaleString('en')} (as it saw it), answers ${statuses}`,
    ok: Object.keys(report.statuses).every((s) => s === '200'),
  });
}
