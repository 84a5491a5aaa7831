// The bystander's side of the stall tests: tenant B's sequential cheap requests, /healthz polled, and Berth's
// main-thread event-loop delay read black-box from /metrics (prom-client's default `nodejs_eventloop_lag_p99_seconds`:
// prom-client 15 resets its monitorEventLoopDelay histogram at every scrape, so each scrape's p99 covers the time since
// the one before). All from the bystander's client address (127.0.0.1), each on a keep-alive connection of its own.
import { queryBody } from './noisy-heavy.js';
import { ADDRESS, clientAgent, exchange, type Exchange } from './noisy-http.js';
import type { Sample } from './noisy-report.js';
import type { StallTenant } from './stall-world.js';

/** B's client gives up on one request after this long. */
export const QUIET_TIMEOUT_MS = 5_000;
/** B stops sending after this long in all (a stalled Berth would otherwise keep the test for minutes). */
export const QUIET_PHASE_MS = 60_000;
/** B sends at most one request per this long, so its 200 requests span ~20 s of the attack. */
export const QUIET_EVERY_MS = 100;
export const HEALTHZ_EVERY_MS = 50;
/** /metrics is scraped this often: few enough delay samples (10 ms apart) per scrape that p99 is their maximum. */
export const SCRAPE_EVERY_MS = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Bystander {
  url: string;
  b: StallTenant & { token: string };
  window: { startMs: number };
}

/** B's cheap requests, alternating: its identity providers, and a 10-row log query over its own source, no filter. */
function quietRequest(by: Bystander, i: number, agent: ReturnType<typeof clientAgent>): Promise<Exchange> {
  if (i % 2 === 0) {
    return exchange(by.url, `/organizations/${by.b.organizationId}/permitted-identity-providers`, {
      token: by.b.token,
      agent,
      timeoutMs: QUIET_TIMEOUT_MS,
    });
  }
  return exchange(by.url, '/cloud/logs/logs-insights', {
    method: 'POST',
    token: by.b.token,
    agent,
    timeoutMs: QUIET_TIMEOUT_MS,
    body: queryBody(
      { ...by.b, token: by.b.token },
      { startMs: by.window.startMs, endMs: Date.now() + 60_000 },
      {
        environmentId: undefined,
        moduleInstanceIds: [by.b.moduleInstanceId],
        limit: 10,
      },
    ),
  });
}

/** What is wrong with B's answer, if anything: every one must be a 200 with B's own data. */
function quietProblem(by: Bystander, i: number, r: Exchange): string | undefined {
  if (r.status !== 200) return `${r.status || r.error} ${r.body.slice(0, 200)}`;
  const body = JSON.parse(r.body) as { data?: string[]; rows?: { sourceId: string }[]; partial?: boolean };
  if (i % 2 === 0) {
    const got = [...(body.data ?? [])].sort().join(',');
    return got === 'SOCIAL_1,SSO_BROKER' ? undefined : `identity providers ${got}`;
  }
  if (body.partial !== false) return 'partial';
  if (body.rows?.length !== 10) return `${body.rows?.length} rows`;
  if (body.rows.some((row) => row.sourceId !== by.b.moduleInstanceId)) return 'rows of another source';
  return undefined;
}

/** One scrape's event-loop figures (seconds in the exposition, ms here). */
export interface LagScrape {
  /** The window this scrape's figures cover: from the scrape before it to this one (ms from the meter's start). */
  fromMs: number;
  atMs: number;
  p99Ms: number;
  maxMs: number;
}

/** `nodejs_eventloop_lag_p99_seconds` and `…_max_seconds` from a /metrics body; undefined when absent. */
export function readLag(body: string): { p99Ms: number; maxMs: number } | undefined {
  const value = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+|NaN)$`, 'm').exec(body);
    return m === null ? undefined : Number(m[1]) * 1000;
  };
  const p99Ms = value('nodejs_eventloop_lag_p99_seconds');
  const maxMs = value('nodejs_eventloop_lag_max_seconds');
  if (p99Ms === undefined || maxMs === undefined) return undefined;
  return { p99Ms, maxMs };
}

/**
 * A scrape waits this long for its answer: a scrape queued behind a blocked event loop must come back, since the
 * scrape that resets the histogram is the one that carries the long delay.
 */
export const SCRAPE_TIMEOUT_MS = 120_000;

export interface LagMeter {
  /** `performance.now()` when the resetting scrape had answered: the origin of `fromMs` and `atMs`. */
  startedAt: number;
  /** Stops scraping; the scrapes taken after the resetting one, and the slowest scrape's round trip. */
  stop(): Promise<{ scrapes: LagScrape[]; problems: string[]; slowestMs: number }>;
}

/**
 * Scrapes /metrics once to reset prom-client's delay histogram (that scrape's figures cover the time before and are
 * dropped), then every SCRAPE_EVERY_MS until stopped. A scrape without the series, or not a 200, is a problem: the
 * default Node series are meant to stay public (no token).
 */
export async function startLagMeter(url: string): Promise<LagMeter> {
  const agent = clientAgent(ADDRESS.quiet, 1);
  const problems: string[] = [];
  const scrapes: LagScrape[] = [];
  let slowestMs = 0;
  const scrape = async () => {
    const r = await exchange(url, '/metrics', { agent, timeoutMs: SCRAPE_TIMEOUT_MS });
    slowestMs = Math.max(slowestMs, r.ms);
    if (r.status !== 200) {
      problems.push(`/metrics: ${r.status || r.error} ${r.body.slice(0, 200)}`);
      return undefined;
    }
    const lag = readLag(r.body);
    if (lag === undefined) problems.push('/metrics without nodejs_eventloop_lag_p99_seconds (a token needed?)');
    return lag;
  };
  await scrape();
  const started = performance.now();
  let done = false;
  const loop = (async () => {
    let from = 0;
    while (!done) {
      await sleep(SCRAPE_EVERY_MS);
      const lag = await scrape();
      const at = performance.now() - started;
      if (lag !== undefined) scrapes.push({ fromMs: from, atMs: at, ...lag });
      from = at;
    }
  })();
  return {
    startedAt: started,
    async stop() {
      done = true;
      await loop;
      agent.destroy();
      return { scrapes, problems: [...new Set(problems)], slowestMs };
    },
  };
}

export interface QuietRun {
  quiet: Sample[];
  health: Sample[];
  problems: string[];
}

/**
 * B's `count` requests one after another on one connection (at most one per `everyMs`), while /healthz is polled on
 * another; both timed here. Stops early (a problem) after QUIET_PHASE_MS.
 */
export async function runQuiet(by: Bystander, count: number, everyMs = 0): Promise<QuietRun> {
  const agent = clientAgent(ADDRESS.quiet, 1);
  const healthAgent = clientAgent(ADDRESS.quiet, 1);
  const quiet: Sample[] = [];
  const health: Sample[] = [];
  const problems: string[] = [];
  let done = false;
  const poller = (async () => {
    while (!done) {
      const r = await exchange(by.url, '/healthz', { agent: healthAgent, timeoutMs: QUIET_TIMEOUT_MS });
      health.push({ ms: r.ms, status: r.status });
      if (r.status !== 200) problems.push(`/healthz: ${r.status || r.error}`);
      await sleep(HEALTHZ_EVERY_MS);
    }
  })();
  const stopAt = performance.now() + QUIET_PHASE_MS;
  for (let i = 0; i < count; i++) {
    if (performance.now() > stopAt) {
      problems.push(`B sent only ${i} of its ${count} requests in ${QUIET_PHASE_MS / 1000} s`);
      break;
    }
    const sent = performance.now();
    const r = await quietRequest(by, i, agent);
    quiet.push({ ms: r.ms, status: r.status });
    const problem = quietProblem(by, i, r);
    if (problem !== undefined) problems.push(`B request ${i}: ${problem}`);
    const rest = everyMs - (performance.now() - sent);
    if (rest > 0) await sleep(rest);
  }
  done = true;
  await poller;
  agent.destroy();
  healthAgent.destroy();
  return { quiet, health, problems };
}
