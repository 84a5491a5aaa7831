// Raw-socket fuzzing (issue 9 §1): what fetch cannot send — duplicate and conflicting
// Content-Length, Content-Length with Transfer-Encoding, bad and truncated chunks, invalid header
// names and values, bare LF, HTTP/1.0 and HTTP/0.9 lines, absurd request lines, NUL bytes, garbage
// pipelined after a valid request — each on its own connection, the answers parsed by hand. Berth
// answers those below Fastify (Node's parser errors, through its clientErrorHandler).
//
// Invariants: a complete, well-framed request is always answered; broken framing may be closed
// without an answer, but any answer is the error object and never a 5xx; no connection is left
// hanging once the client has sent everything; the process is alive at the end. Seed and replay as
// in fuzz.test.ts (FUZZ_SEED, FUZZ_KEEP_GOING); a failure prints the exact bytes as a printf | nc line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBerth, type Berth } from './support/berth-process.js';
import { exchangeProblems, fuzz, RAW_REQUESTS, SEED, Tally } from './support/fuzz-check.js';
import { RawRequest, rawRequest } from './support/fuzz-raw-requests.js';
import { setReplayPort } from './support/fuzz-request.js';
import { exchange } from './support/fuzz-wire.js';
import { fuzzFixture } from './support/fuzz-world.js';
import { FULL } from './support/summary.js';

let berth: Berth;
let port: number;
const tally = new Tally();
let alive = false;

beforeAll(async () => {
  berth = await startBerth({ fixture: fuzzFixture() });
  port = Number(new URL(berth.url).port);
  setReplayPort(port);
  console.log(`raw fuzzing: seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${RAW_REQUESTS} requests`);
});

afterAll(async () => {
  if (berth !== undefined) tally.record('fuzzing', 'raw socket', alive, RAW_REQUESTS);
  await berth?.close();
});

async function sendRaw(request: RawRequest): Promise<string[]> {
  const ex = await exchange(port, request.bytes, {
    methods: request.complete > 0 ? request.methods.slice(0, request.complete) : request.methods,
    halfClose: request.halfClose,
    timeoutMs: 10_000,
    streamCutMs: 500,
  });
  const problems = exchangeProblems(ex, request.methods, request.complete > 0);
  if (
    request.complete > 1 &&
    ex.responses.length > 0 &&
    ex.responses.length < request.complete &&
    ex.responses.every((r) => r.status < 400)
  ) {
    problems.push(`${request.complete} complete requests, ${ex.responses.length} answered`);
  }
  if (ex.timedOut && ex.responses.length < Math.max(request.complete, 1))
    problems.push('the connection was left hanging after the client sent everything');
  tally.note(
    ex,
    problems,
    request.note.replace(/ ?("[^"]*"|\[[^\]]*\]| at \d+| to 0x[0-9a-f]+|, \d+-byte chunks)|^body \d+/g, (m) =>
      m.startsWith('body') ? 'body N' : '',
    ),
  );
  return problems;
}

/** Framing the fuzzer found mishandled, and the forms the issue names, checked on every run. */
const EXPLICIT: [string, RawRequest][] = [
  [
    'duplicate Content-Length with different values',
    new RawRequest(
      Buffer.from('POST /module-categories HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'),
      0,
      ['POST'],
      'conflicting lengths',
    ),
  ],
  [
    'Content-Length and Transfer-Encoding together',
    new RawRequest(
      Buffer.from(
        'POST /module-categories HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      ),
      0,
      ['POST'],
      'CL+TE',
    ),
  ],
  [
    'a chunk size that is not hex',
    new RawRequest(
      Buffer.from(
        'POST /module-categories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      ),
      0,
      ['POST'],
      'bad chunk size',
    ),
  ],
  [
    'a NUL byte in a header value',
    new RawRequest(Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n', 'latin1'), 0, ['GET'], 'NUL'),
  ],
  ['an HTTP/0.9 request line', new RawRequest(Buffer.from('GET /healthz\r\n'), 0, ['GET'], 'HTTP/0.9')],
  [
    'an HTTP/1.0 request without Host',
    new RawRequest(Buffer.from('GET /healthz HTTP/1.0\r\n\r\n'), 1, ['GET'], 'HTTP/1.0'),
  ],
  [
    'an HTTP/1.1 request without Host',
    new RawRequest(Buffer.from('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'), 1, ['GET'], 'no Host'),
  ],
  [
    'a CONNECT request',
    new RawRequest(
      Buffer.from('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'),
      1,
      ['CONNECT'],
      'CONNECT',
    ),
  ],
  [
    'headers past 16 KiB',
    new RawRequest(
      Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`),
      1,
      ['GET'],
      'huge header',
    ),
  ],
];

describe('raw framing the issue names is answered with the error object or closed', () => {
  it.each(EXPLICIT)('%s', async (_name, request) => {
    expect(await sendRaw(request), request.describe(port)).toEqual([]);
  });
});

it(
  'fuzzed raw requests never get a 5xx, complete ones are always answered, and every answer to broken framing is the error object',
  async () => {
    await fuzz(rawRequest, RAW_REQUESTS, tally, sendRaw);
    expect(tally.failures).toEqual([]);
  },
  FULL ? 600_000 : 60_000,
);

it('after the raw fuzzing the process is alive and /healthz answers 200, and every planned request was sent', async () => {
  expect(berth.server.child.exitCode).toBeNull();
  expect(berth.server.child.signalCode).toBeNull();
  expect((await berth.request('GET', '/healthz')).status).toBe(200);
  alive = true;
  expect(tally.requests).toBeGreaterThanOrEqual(RAW_REQUESTS);
  console.log(
    `raw fuzzing: ${tally.requests} requests; statuses ${tally.statusLine()}; 5xx ${tally.fiveXx}; non-conforming ${tally.nonConforming}; unanswered ${tally.unanswered}\n${tally.report()}`,
  );
});
