// Slow clients: HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS (receiving the request only, never the answer), over raw
// sockets. Greedy ones (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS): connections.test.ts.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { openSse } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

const ERROR_KEYS = ['code', 'message', 'requestId'];

const apps: TestApp[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const t of apps.splice(0)) await t.close();
});

async function app(config: Partial<Config>, fixture?: Record<string, unknown>): Promise<TestApp> {
  const t = await startTestApp({ config, fixture });
  apps.push(t);
  return t;
}

interface RawConnection {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves once the server closed the connection, with the time it took since `opened`. */
  closed: Promise<number>;
  opened: number;
}

async function open(t: TestApp): Promise<RawConnection> {
  const { port } = new URL(t.url);
  const socket = connect(Number(port), '127.0.0.1');
  sockets.push(socket);
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const opened = Date.now();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - opened)));
  return { socket, received: () => data, closed, opened };
}

/** Writes `chunks` one by one, `everyMs` apart, while the socket stays writable. */
function trickle(socket: Socket, chunks: string[], everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (i >= chunks.length || socket.destroyed || !socket.writable) return clearInterval(timer);
    socket.write(chunks[i++]!);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

/** The raw answer must be a 408 carrying the error object `http:request:timeout`. */
function expectTimeoutAnswer(raw: string): void {
  expect(raw).toMatch(/^HTTP\/1\.1 408 /);
  const [head, body] = raw.split('\r\n\r\n');
  expect(head).toMatch(/\r\ncontent-type: application\/json/i);
  const error = JSON.parse(body!);
  expect(error.code).toBe('http:request:timeout');
  expect(Object.keys(error).sort()).toEqual(ERROR_KEYS);
  expect(head).toContain(`x-request-id: ${error.requestId}`);
}

const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 3_000;
/** Node checks its timeouts once a second: an expiry is noticed up to that late (plus a loaded machine's lag). */
const SLACK_MS = 1_000 + 2_000;

describe('slow clients', () => {
  it('disconnects a client trickling its headers (slowloris) after HEADERS_TIMEOUT_MS, with a 408 error object', async () => {
    const t = await app({ HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS });
    const c = await open(t);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    trickle(
      c.socket,
      Array.from({ length: 100 }, (_, i) => `X-Slow-${i}: 1\r\n`),
      100,
    );
    const after = await c.closed;
    expect(after).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(after).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    expectTimeoutAnswer(c.received());
    // The server is fine meanwhile.
    expect((await t.request('GET', '/healthz')).status).toBe(200);
  }, 120_000);

  it('disconnects a client that connects and sends nothing, after HEADERS_TIMEOUT_MS', async () => {
    const t = await app({ HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS });
    const c = await open(t);
    const after = await c.closed;
    expect(after).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(after).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
  }, 120_000);

  it('disconnects a client trickling its body after REQUEST_TIMEOUT_MS, with a 408 error object', async () => {
    const t = await app({ HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS });
    const c = await open(t);
    const body = JSON.stringify({
      data: { givenId: 'slow', name: 'Slow', sortOrder: 1, description: 'x'.repeat(200) },
    });
    c.socket.write(
      `POST /module-categories HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKENS.admin}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    trickle(c.socket, body.slice(10).split(''), 100);
    const after = await c.closed;
    expect(after).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(after).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expectTimeoutAnswer(c.received());
  }, 120_000);

  it('never cuts a log stream that lasts longer than REQUEST_TIMEOUT_MS', async () => {
    const timeoutMs = 1_000;
    const t = await app(
      {
        HEADERS_TIMEOUT_MS: timeoutMs,
        REQUEST_TIMEOUT_MS: timeoutMs,
        STREAM_POLL_INTERVAL_MS: 50,
        STREAM_KEEPALIVE_MS: 200,
      },
      mergeWorld(baseWorld(), {
        cloudAccounts: [{ id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' }],
      }),
    );
    const stream = await openSse(t.url, TOKENS.viewer, {
      accountId: 'acc-a',
      logGroups: '/slow/tail',
      logStreamPrefix: 's/',
      tail: true,
    });
    try {
      expect(stream.res.status).toBe(200);
      const started = Date.now();
      while (Date.now() - started < 3 * timeoutMs + 1_000) {
        expect(await stream.next(5_000)).toBeDefined();
      }
      // Still open, still live: an event written now arrives.
      const ingest = await t.request('POST', '/cloud/logs/local/events', {
        token: TOKENS.admin,
        body: {
          accountId: 'acc-a',
          region: 'eu-west-1',
          logGroup: '/slow/tail',
          logStream: 's/1',
          events: [{ message: 'still here' }],
        },
      });
      expect(ingest.status, ingest.text).toBe(202);
      const events = await stream.events(1, 10_000);
      expect(events.map((e) => e.message)).toEqual(['still here']);
    } finally {
      stream.close();
    }
  }, 120_000);
});
