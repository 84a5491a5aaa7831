// Load shedding on event-loop lag (@fastify/under-pressure): the test blocks the loop of the process the app runs
// in, on purpose, with a small PRESSURE_MAX_EVENT_LOOP_DELAY_MS.
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { ORG_A, TOKENS } from '../support/world.js';

const CHEAP = '/module-categories';
const IDP = `/organizations/${ORG_A}/permitted-identity-providers`;
const MAX_DELAY_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Keeps the event loop busy: `busyMs` of blocking code at every turn, until stopped. */
function overload(busyMs: number): { stop(): Promise<void> } {
  let running = true;
  const done = new Promise<void>((resolve) => {
    const turn = () => {
      if (!running) return resolve();
      const until = performance.now() + busyMs;
      while (performance.now() < until) {
        // Blocking on purpose.
      }
      setImmediate(turn);
    };
    setImmediate(turn);
  });
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function expectShed(res: TestResponse): void {
  expectError(res, 503, 'internal:server:unavailable');
  expect(Object.keys(res.body).sort()).toEqual(['code', 'description', 'message', 'requestId']);
  expect(res.body.isInternal).toBeUndefined();
  expect(res.headers.get('retry-after')).toBe('1');
}

const apps: TestApp[] = [];
afterEach(async () => {
  for (const t of apps.splice(0)) await t.close();
});

async function app(config: Partial<Config>): Promise<TestApp> {
  const t = await startTestApp({ config });
  apps.push(t);
  // Shedding is armed two samples after the app is ready (starting up stalls the loop once).
  await sleep(500);
  return t;
}

describe('load shedding', () => {
  it('answers 503 with the error object and Retry-After while the loop lags; /readyz too; then recovers', async () => {
    const t = await app({ PRESSURE_MAX_EVENT_LOOP_DELAY_MS: MAX_DELAY_MS });
    expect((await t.request('GET', CHEAP, { token: TOKENS.viewer })).status).toBe(200);

    const load = overload(4 * MAX_DELAY_MS);
    try {
      let shed: TestResponse | undefined;
      await until('a request shed', async () => {
        const res = await t.request('GET', CHEAP, { token: TOKENS.viewer });
        expect([200, 503]).toContain(res.status);
        if (res.status === 503) shed = res;
        return res.status === 503;
      });
      expectShed(shed!);

      // While the loop still lags: readiness says so in its own format, liveness and the metrics answer, and
      // so does the identity-provider route (its spec statuses exclude 503). Shedding comes before
      // authentication: a request without a token is shed too.
      const ready = await t.request('GET', '/readyz');
      expectError(ready, 503, 'internal:server:unavailable');
      expect(ready.body.description).toBe('overloaded');
      expect(ready.headers.get('retry-after')).toBe('1');
      expect((await t.request('GET', '/healthz')).status).toBe(200);
      expect((await t.request('GET', '/metrics')).status).toBe(200);
      const idp = await t.request('GET', IDP, { token: TOKENS.viewer });
      expect(idp.status).toBe(200);
      expectShed(await t.request('GET', CHEAP));
      expectShed(await t.request('POST', CHEAP, { token: TOKENS.admin, body: { givenId: 'x' } }));
    } finally {
      await load.stop();
    }

    await until('/readyz ready again', async () => (await t.request('GET', '/readyz')).status === 200);
    await until('requests served again', async () => {
      return (await t.request('GET', CHEAP, { token: TOKENS.viewer })).status === 200;
    });
    const counted = [...t.app.throttled.entries()];
    expect(counted).toHaveLength(1);
    expect(counted[0]).toMatchObject({ reason: 'pressure', organization: '' });
    expect(counted[0]!.count).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('sheds nothing when PRESSURE_MAX_EVENT_LOOP_DELAY_MS is 0', async () => {
    const t = await app({ PRESSURE_MAX_EVENT_LOOP_DELAY_MS: 0 });
    const load = overload(4 * MAX_DELAY_MS);
    try {
      for (let i = 0; i < 5; i++) {
        expect((await t.request('GET', CHEAP, { token: TOKENS.viewer })).status).toBe(200);
        expect((await t.request('GET', '/readyz')).status).toBe(200);
      }
    } finally {
      await load.stop();
    }
  }, 120_000);
});
