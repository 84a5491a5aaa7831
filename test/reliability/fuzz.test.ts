// Property-based fuzzing of every route over HTTP (issue 9 §1): wrong types, missing and extra
// fields, huge strings and arrays, deep and wide filter trees, invalid regexes and filter patterns,
// impossible dates and numbers, `__proto__` keys, NUL and invalid UTF-8 bytes, percent-encoding
// tricks, repeated parameters, wrong methods, odd headers and oversized bodies — each request on its
// own connection. Invariants: no 5xx, every error is exactly the error object, every request is
// answered, and the process is alive at the end.
//
// Seed: printed at the start; FUZZ_SEED=<n> replays or explores. FUZZ_KEEP_GOING=1 lists every
// failure instead of stopping and shrinking the first. A failure prints the shrunk request as a curl
// command and as the exact bytes (`printf '…' | nc 127.0.0.1 PORT`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { HTTP_REQUESTS, fuzz, SEED, sendChecked, Tally } from './support/fuzz-check.js';
import { REGRESSIONS } from './support/fuzz-regressions.js';
import { setReplayPort } from './support/fuzz-request.js';
import { ROUTES } from './support/fuzz-routes.js';
import { fuzzFixture } from './support/fuzz-world.js';
import { FULL } from './support/summary.js';

let berth: Berth;
let dns: TestDnsServer;
let port: number;
const tally = new Tally();
const perRoute = Math.ceil(HTTP_REQUESTS / ROUTES.length);
let alive = false;

beforeAll(async () => {
  // Domain checks resolve through a local DNS server (every name NXDOMAIN), never the machine's resolver.
  dns = await startDnsServer();
  berth = await startBerth({ fixture: fuzzFixture(), env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500' } });
  port = Number(new URL(berth.url).port);
  setReplayPort(port);
  console.log(
    `HTTP fuzzing: seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${perRoute} requests per route, ${ROUTES.length} routes`,
  );
});

afterAll(async () => {
  if (berth !== undefined) tally.record('fuzzing', 'HTTP', alive, perRoute * ROUTES.length);
  await berth?.close();
  await dns?.close();
});

describe('requests that once broke Berth are answered with the error object', () => {
  it.each(REGRESSIONS.map((r) => [r.name, r] as const))('%s', async (_name, regression) => {
    for (let i = 0; i < (regression.repeat ?? 1); i++) {
      const problems = await sendChecked(port, regression.request, tally, 'regressions');
      if (problems.length > 0) expect(problems, regression.request.describe(port)).toEqual([]);
    }
  });
});

describe('fuzzing every route', () => {
  for (const route of ROUTES) {
    it(
      `fuzzed ${route.name} requests never get a 5xx, always get an answer, and every error is exactly the error object`,
      async () => {
        await fuzz(route.arb, perRoute, tally, (request) => sendChecked(port, request, tally, route.name));
        expect(tally.failures).toEqual([]);
      },
      FULL ? 600_000 : 60_000,
    );
  }
});

it('after the fuzzing the process is alive and /healthz answers 200, and every planned request was sent', async () => {
  expect(berth.server.child.exitCode).toBeNull();
  expect(berth.server.child.signalCode).toBeNull();
  expect((await berth.request('GET', '/healthz')).status).toBe(200);
  alive = true;
  expect(tally.requests).toBeGreaterThanOrEqual(perRoute * ROUTES.length);
  console.log(
    `HTTP fuzzing: ${tally.requests} requests; statuses ${tally.statusLine()}; 5xx ${tally.fiveXx}; non-conforming ${tally.nonConforming}; unanswered ${tally.unanswered}\n${tally.report()}`,
  );
});
