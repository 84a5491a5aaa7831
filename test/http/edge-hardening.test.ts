import { createServer, connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { loggerOptions } from '../../src/http/log-serializers.js';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { domainWorld } from '../support/domain-world.js';
import { FAKE_CREDENTIALS } from '../support/fake-aws/index.js';
import { ORG_A, TOKENS } from '../support/world.js';

const GENERATED_REQUEST_ID = /^req_[A-Za-z0-9_-]{16}$/;

let t: TestApp;
let closedPort: number;

beforeAll(async () => {
  closedPort = await unusedPort();
  t = await startTestApp({
    fixture: domainWorld({
      // An AWS account whose endpoint refuses connections: every ACM call fails with ECONNREFUSED.
      cloudAccounts: [
        {
          id: 'acct-a-aws',
          organizationId: ORG_A,
          provider: 'aws',
          region: 'eu-west-1',
          endpoint: `http://127.0.0.1:${closedPort}`,
        },
      ],
      certificates: [
        {
          id: 'cert-unreachable',
          moduleInstanceId: 'mi-a-web',
          domainName: 'unreachable.acme.example',
          status: 'PENDINGVALIDATION',
          arn: 'arn:aws:acm:eu-west-1:123456789012:certificate/unreachable',
        },
      ],
    }),
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(1, 5) } },
      }),
  });
});
afterAll(async () => t?.close());

async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface RawResponse extends TestResponse {
  /** Everything the server wrote before it closed the connection. */
  raw: string;
}

function parseResponse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = (end === -1 ? raw : raw.slice(0, end)).split('\r\n');
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  const text = end === -1 ? '' : raw.slice(end + 4);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body, text, raw };
}

/** Collects what the server writes on `socket` until the connection closes (or is reset). */
function readUntilClosed(socket: Socket): Promise<RawResponse> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  return new Promise((resolve) =>
    socket.on('close', () => resolve(parseResponse(Buffer.concat(chunks).toString('latin1')))),
  );
}

function port(): number {
  return Number(new URL(t.url).port);
}

/** Sends bytes as they are — no HTTP client would send most of these — and reads the answer. */
async function rawRequest(request: string | Buffer): Promise<RawResponse> {
  const socket = connect(port(), '127.0.0.1');
  const response = readUntilClosed(socket);
  socket.write(request);
  return response;
}

/** A client connection and the server's end of it. */
async function connection(): Promise<{ client: Socket; server: Socket }> {
  const accepted = new Promise<Socket>((resolve) => t.app.server.once('connection', resolve));
  const client = connect(port(), '127.0.0.1');
  return { client, server: await accepted };
}

function expectRawError(res: RawResponse, status: number, code: string): void {
  expect(res.raw.match(/HTTP\/1\.1 /g), 'exactly one response').toHaveLength(1);
  expectError(res, status, code);
  expect(res.body.requestId).toMatch(GENERATED_REQUEST_ID);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
  expect(res.headers.get('connection')).toBe('close');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe("requests refused by Node's HTTP parser", () => {
  it('answer a 20,000-character header with 431 and the error object', async () => {
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectRawError(res, 431, 'http:request:headers-too-large');
  });

  it('answer a client still sending an overlong request line with 431, then keep reading it: no reset', async () => {
    // Refused at 16 KiB while more of the line is on its way: a socket closed at once answers what arrives next with
    // a reset, and a client that had not read the 431 yet loses it (found by the fuzzing under load). The
    // connection closes lingering instead: our side ends, and what the client still sends is read and dropped.
    const client = connect({ port: port(), host: '127.0.0.1', allowHalfOpen: true });
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    client.write(`GET /auth/sign-in/${'%00'.repeat(10_000)}`);
    await ended;
    expectRawError(parseResponse(Buffer.concat(chunks).toString('latin1')), 431, 'http:request:headers-too-large');
    for (let i = 0; i < 8; i++) {
      client.write('%00'.repeat(20_000));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.end(' HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed;
    expect(errors.map((e) => (e as NodeJS.ErrnoException).code)).toEqual([]);
  });

  it('answer broken framing and invalid bytes with 400 and the error object', async () => {
    const auth = `Authorization: Bearer ${TOKENS.owner}\r\nContent-Type: application/json\r\n`;
    const cases: Record<string, string> = {
      'two Content-Length headers': `POST /module-categories HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      'a bare CR in a header value': 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\rb\r\n\r\n',
      'a LF in a header name': 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-B\nad: 1\r\n\r\n',
      'a separator in a header name': 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-B(ad): 1\r\n\r\n',
      'a DEL in a header value': 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x7fb\r\n\r\n',
      'Content-Length with chunked': `POST /module-categories HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      'a chunk size that is not hexadecimal': `POST /module-categories HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      'a garbage request line': 'HELLO WORLD\r\n\r\n',
    };
    for (const [name, request] of Object.entries(cases)) {
      const res = await rawRequest(request);
      expect(res.status, name).toBe(400);
      expectRawError(res, 400, 'http:request:malformed');
    }
  });

  it('answer a request timeout with 408, and leave a reset or closing connection unanswered', async () => {
    const timedOut = await connection();
    const answer = readUntilClosed(timedOut.client);
    // Node raises this from its connection check (every 30 s by default); the handler is the same.
    t.app.server.emit(
      'clientError',
      Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }),
      timedOut.server,
    );
    expectRawError(await answer, 408, 'http:request:timeout');

    const reset = await connection();
    const nothing = readUntilClosed(reset.client);
    t.app.server.emit('clientError', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), reset.server);
    expect((await nothing).raw).toBe('');
    expect(reset.server.destroyed).toBe(true);

    const closing = await connection();
    const silence = readUntilClosed(closing.client);
    closing.server.end();
    t.app.server.emit(
      'clientError',
      Object.assign(new Error('Parse Error'), { code: 'HPE_INVALID_METHOD' }),
      closing.server,
    );
    expect((await silence).raw).toBe('');

    expect((await t.request('GET', '/healthz')).status).toBe(200);
  });
});

describe('a known path with another method', () => {
  it('is 405 with an Allow header, before authentication, while unknown paths stay 404', async () => {
    for (const token of [undefined, TOKENS.owner, 'not-a-token']) {
      const res = await t.request('DELETE', '/module-categories', { token });
      expectError(res, 405, 'http:method:not-allowed');
      expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    }
    const put = await t.request('PUT', '/organizations/x/permitted-identity-providers', {
      token: TOKENS.owner,
      body: {},
    });
    expectError(put, 405, 'http:method:not-allowed');
    expect(put.headers.get('allow')).toBe('GET, HEAD');
    expect((await t.request('POST', '/module-categories/some-id?x=1')).headers.get('allow')).toBe('GET, HEAD');

    expectError(await t.request('DELETE', '/nope'), 404, 'http:route:not-found');
    expectError(await t.request('GET', '/module-categories/a/b', { token: TOKENS.owner }), 404, 'http:route:not-found');
  });
});

describe('overlong and malformed path parameters', () => {
  it('answer 400 validation:request:invalid-params without echoing the URL', async () => {
    const id = `x${'0123456789'.repeat(500)}`;
    const paths = [`/module-categories/${id}`, `/module-categories/${id.slice(0, 3000)}%E0%A4%A`];
    for (const path of paths) {
      const res = await t.request('GET', path, { token: TOKENS.owner });
      expectError(res, 400, 'validation:request:invalid-params');
      expect(res.text.length).toBeLessThan(500);
      expect(res.text).not.toContain('0123456789'.repeat(3));
      expect(res.body.description.length).toBeLessThanOrEqual(200);
    }
  });
});

describe('two Authorization headers', () => {
  it('are refused with 401 auth:token:invalid even when the first is valid', async () => {
    for (const second of [TOKENS.owner, TOKENS.superadmin, 'garbage']) {
      const res = await rawRequest(
        `GET /module-categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.owner}\r\nAuthorization: Bearer ${second}\r\nConnection: close\r\n\r\n`,
      );
      expectError(res, 401, 'auth:token:invalid');
    }
  });
});

describe('response headers', () => {
  it('forbid sniffing and caching on answers and errors alike', async () => {
    const answers = [
      await t.request('GET', '/module-categories', { token: TOKENS.owner }),
      await t.request('GET', '/module-categories'),
      await t.request('GET', '/nope'),
      await t.request('DELETE', '/module-categories'),
      await t.request('GET', `/module-categories/${'y'.repeat(5000)}`, { token: TOKENS.owner }),
      await t.request('GET', '/healthz'),
    ];
    for (const res of answers) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    expect(answers.map((r) => r.status)).toEqual([200, 401, 404, 405, 400, 200]);
  });
});

/** What Berth logs at `level` while `send` makes its requests to a server of its own. */
async function logOf(level: string, send: (url: string) => Promise<void>): Promise<string> {
  let log = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      log += chunk.toString();
      done();
    },
  });
  const app = await buildApp({ config: t.config, services: t.services, logger: { ...loggerOptions(level), stream } });
  try {
    await send(await app.listen({ port: 0, host: '127.0.0.1' }));
  } finally {
    await app.close();
  }
  return log;
}

describe('the request log', () => {
  it('holds no token, whether in the query string or the Authorization header', async () => {
    const log = await logOf('trace', async (url) => {
      await fetch(`${url}/healthz?access_token=berth_secret123&keep=visible&API_KEY=k-secret-456&Token=t-secret-789`);
      await fetch(`${url}/module-categories?apikey=ak-secret-000`, {
        headers: { authorization: `Bearer ${TOKENS.owner}` },
      });
      await fetch(`${url}/nope?key=nf-secret-111`, { headers: { authorization: `Bearer ${TOKENS.admin}` } });
    });
    // At debug and below the arrival is logged too; the completion line carries the request (AccessLog).
    expect(log).toContain('incoming request');
    const completed = log.split('\n').filter((line) => line.includes('request completed'));
    expect(completed).toHaveLength(3);
    expect(completed[0]).toContain('access_token=[redacted]');
    expect(completed[0]).toContain('"statusCode":200');
    expect(log).toContain('access_token=[redacted]');
    expect(log).toContain('keep=visible');
    for (const secret of [
      'berth_secret123',
      'k-secret-456',
      't-secret-789',
      'ak-secret-000',
      'nf-secret-111',
      TOKENS.owner,
      TOKENS.admin,
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});

describe('the access log at LOG_LEVEL=info', () => {
  it('writes one line per request, when it completes, with its method, URL, status and time', async () => {
    const log = await logOf('info', async (url) => {
      await fetch(`${url}/healthz`);
      await fetch(`${url}/nope`);
    });
    const lines = log
      .split('\n')
      .filter((line) => line.includes('"requestId"'))
      .map((line) => JSON.parse(line) as Record<string, any>);
    expect(lines.map((l) => l.msg)).toEqual(['request completed', 'request completed']);
    expect(lines[0]).toMatchObject({ req: { method: 'GET', url: '/healthz' }, res: { statusCode: 200 } });
    expect(lines[1]).toMatchObject({ req: { method: 'GET', url: '/nope' }, res: { statusCode: 404 } });
    expect(typeof lines[0]!.responseTime).toBe('number');
  });
});

describe('a certificate retry whose provider cannot be reached', () => {
  const retry = (token: string) =>
    t.request('POST', '/managed-certificates/cert-unreachable/retry-validation', { token });

  it('shows the network error to a superadmin only', async () => {
    const res = await retry(TOKENS.admin);
    expectError(res, 502, 'certificates:authority:failed');
    expect(res.body.description).toBe('The AWS certificate authority failed during DescribeCertificate.');
    for (const leak of ['127.0.0.1', String(closedPort), 'ECONNREFUSED']) expect(res.text).not.toContain(leak);

    const root = await retry(TOKENS.superadmin);
    expectError(root, 502, 'certificates:authority:failed');
    expect(root.body.description).toContain(`127.0.0.1:${closedPort}`);
    expect(root.body.isInternal).toBe(true);
  });
});
