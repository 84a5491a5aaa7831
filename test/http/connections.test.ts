// Open connections per client address and per process (MAX_CONNECTIONS_PER_ADDRESS, MAX_CONNECTIONS with idle
// keep-alive connections closed first), and the client address behind TRUST_PROXY, over raw sockets bound to
// addresses of the loopback (on Linux the whole 127.0.0.0/8 is loopback).
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../../src/config.js';
import { addressKey, compileTrustProxy } from '../../src/core/client-address.js';
import { buildApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services/index.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { streamQuery } from '../support/log-stream-wire.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';

/** A loaded machine may take a while to open a database: every app of this file shares one. */
const SLOW_MS = 120_000;

let base: TestApp;
beforeAll(async () => {
  base = await startTestApp({
    fixture: mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: 'acc-a', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' }],
    }),
  });
}, SLOW_MS);
afterAll(async () => {
  await base?.close();
});

interface Server {
  app: FastifyInstance;
  url: string;
}

const servers: { app: FastifyInstance; services: Services }[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const { app, services } of servers.splice(0)) {
    await services.close();
    await app.close();
  }
});

/** An app of its own configuration on the shared database, listening on 127.0.0.1. */
async function app(overrides: Partial<Config>): Promise<Server> {
  const config = loadConfig({}, { LOG_LEVEL: 'silent', ...overrides });
  const services = createServices(base.store, config);
  const fastify = await buildApp({ config, services });
  servers.push({ app: fastify, services });
  return { app: fastify, url: await fastify.listen({ port: 0, host: '127.0.0.1' }) };
}

/** Waits for the server's own count to reach a state (no sleeps: a loaded machine only makes it slower). */
const until = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 20 });

interface Raw {
  socket: Socket;
  received(): string;
  /** Resolves once the connection closed (either side). */
  closed: Promise<void>;
  isClosed(): boolean;
  /** Sends a keep-alive request and resolves with its whole response (head and Content-Length body). */
  send(request: string): Promise<string>;
}

async function open(t: Server, localAddress = '127.0.0.1'): Promise<Raw> {
  const { port } = new URL(t.url);
  const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress });
  sockets.push(socket);
  let data = '';
  let closedFlag = false;
  let waiter: (() => void) | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
    waiter?.();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedFlag = true;
      waiter?.();
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const send = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const from = data.length;
      const check = () => {
        const text = data.slice(from);
        const headEnd = text.indexOf('\r\n\r\n');
        if (headEnd >= 0) {
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, headEnd))?.[1] ?? 0);
          if (Buffer.byteLength(text.slice(headEnd + 4)) >= length) {
            waiter = undefined;
            return resolve(text);
          }
        }
        if (closedFlag) {
          waiter = undefined;
          reject(new Error(`connection closed before a whole response: ${JSON.stringify(text)}`));
        }
      };
      waiter = check;
      socket.write(request);
      check();
    });
  return { socket, received: () => data, closed, isClosed: () => closedFlag, send };
}

/** The connection closes within 10 s (keep-alive would keep it 72 s): a failure shows at once, not at the timeout. */
async function closedSoon(c: Raw): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the connection is still open after 10 s')), 10_000);
  });
  await Promise.race([c.closed, late]).finally(() => clearTimeout(timer));
}

const HEALTHZ = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';

async function expectServed(c: Raw): Promise<void> {
  const answer = await c.send(HEALTHZ);
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  expect(answer).toContain('{"status":"ok"}');
}

/** The server closed this connection as it arrived: nothing was answered, even to a request sent at once. */
async function expectRefused(c: Raw): Promise<void> {
  c.socket.write(HEALTHZ);
  await closedSoon(c);
  expect(c.received()).toBe('');
}

/** One request from `localAddress` over a connection of its own, with extra headers. */
function call(
  t: Server,
  path: string,
  opts: { localAddress?: string; headers?: Record<string, string>; token?: string } = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(path, t.url),
      { headers, agent: false, localAddress: opts.localAddress ?? '127.0.0.1' },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers: h, body: text ? JSON.parse(text) : undefined, text });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('client address keys', () => {
  it('keeps IPv4, maps IPv4-mapped IPv6 to IPv4, and groups other IPv6 addresses by their /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    // Any address of the same /64, however written, is the same key…
    expect(addressKey('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressKey('fe80::1%eth0')).toBe(addressKey('fe80::2'));
    // …and the next /64 is another.
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('::1')).toBe('::/64');
    // Not an address: kept, never merged with one.
    expect(addressKey('Unix-Socket')).toBe('unix-socket');
  });

  it('trusts the proxies TRUST_PROXY names (addresses, CIDRs, names), none when it is empty', () => {
    expect(compileTrustProxy('')).toBeUndefined();
    expect(compileTrustProxy(' , ')).toBeUndefined();
    const trust = compileTrustProxy('10.0.0.0/8, 192.0.2.1,2001:db8::/32,loopback')!;
    for (const a of ['10.1.2.3', '::ffff:10.1.2.3', '192.0.2.1', '2001:db8:ffff::1', '127.0.0.1', '::1'])
      expect(trust(a, 0), a).toBe(true);
    for (const a of ['11.0.0.1', '192.0.2.2', '2001:db9::1', '203.0.113.7']) expect(trust(a, 0), a).toBe(false);
  });

  it('refuses a TRUST_PROXY entry that is no address, naming the variable', () => {
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/8,proxy.internal' })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/8,proxy.internal' })).toThrow(/TRUST_PROXY: invalid IP address/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/TRUST_PROXY: invalid range/);
    expect(loadConfig({}).TRUST_PROXY).toBe('');
    expect(loadConfig({}).MAX_CONNECTIONS_PER_ADDRESS).toBe(256);
  });
});

describe('MAX_CONNECTIONS_PER_ADDRESS', () => {
  it(
    'closes a connection past the cap from one address as it arrives; other addresses are served',
    async () => {
      const t = await app({ MAX_CONNECTIONS_PER_ADDRESS: 3 });
      const held = [await open(t), await open(t), await open(t)];
      for (const c of held) await expectServed(c);
      expect(t.app.connections.openFrom('127.0.0.1')).toBe(3);

      await expectRefused(await open(t));
      expect(t.app.connections.refused).toEqual({ address: 1, process: 0 });

      // Another client is served, and the three held connections still are.
      await expectServed(await open(t, '127.0.0.2'));
      for (const c of held) await expectServed(c);

      // Once one of the three closes, the address may open another.
      held[0]!.socket.destroy();
      await until(() => expect(t.app.connections.openFrom('127.0.0.1')).toBe(2));
      await expectServed(await open(t));
      expect(t.app.connections.refused).toEqual({ address: 1, process: 0 });
    },
    SLOW_MS,
  );
});

describe('MAX_CONNECTIONS', () => {
  it(
    'closes the connection idle the longest to take a new one',
    async () => {
      const t = await app({ MAX_CONNECTIONS: 4 });
      const c = [await open(t), await open(t), await open(t), await open(t)];
      for (const x of c) await expectServed(x);
      // c[1] is used again: now c[0] is idle the longest, then c[2], c[3], c[1].
      await expectServed(c[1]!);
      await until(() => expect(t.app.connections.idle).toBe(4));

      const fifth = await open(t, '127.0.0.2');
      await closedSoon(c[0]!);
      await expectServed(fifth);
      await until(() => expect(t.app.connections.idle).toBe(4));

      const sixth = await open(t, '127.0.0.3');
      await closedSoon(c[2]!);
      await expectServed(sixth);
      for (const x of [c[1]!, c[3]!]) {
        expect(x.isClosed()).toBe(false);
        await expectServed(x);
      }
      expect(t.app.connections.idleClosed).toBe(2);
      expect(t.app.connections.refused).toEqual({ address: 0, process: 0 });
    },
    SLOW_MS,
  );

  it(
    'never closes a busy connection (a log stream): a newcomer is refused only when every connection is busy',
    async () => {
      const t = await app({ MAX_CONNECTIONS: 3, STREAM_POLL_INTERVAL_MS: 50, STREAM_KEEPALIVE_MS: 200 });
      const streamRequest =
        `GET /cloud/logs/stream?${streamQuery({ accountId: 'acc-a', logGroups: '/conn/tail', logStreamPrefix: 's/', tail: true })} HTTP/1.1\r\n` +
        `Host: localhost\r\nAuthorization: Bearer ${TOKENS.viewer}\r\nAccept: text/event-stream\r\n\r\n`;
      const openStream = async () => {
        const s = await open(t);
        s.socket.write(streamRequest);
        await until(() => expect(s.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/));
        return s;
      };
      const streams = [await openStream(), await openStream()];
      const idle = await open(t);
      await expectServed(idle);
      await until(() => expect(t.app.connections.idle).toBe(1));

      // Full: the idle connection makes room, the streams are left alone.
      const third = await openStream();
      await closedSoon(idle);
      expect(t.app.connections.idleClosed).toBe(1);

      // Full and every connection busy: the newcomer is refused.
      await expectRefused(await open(t, '127.0.0.2'));
      expect(t.app.connections.refused).toEqual({ address: 0, process: 1 });
      // The streams go on: keep-alive comments still arrive on each.
      for (const s of [...streams, third]) {
        expect(s.isClosed()).toBe(false);
        const before = s.received().length;
        await until(() => expect(s.received().length).toBeGreaterThan(before));
      }

      // A stream that ends frees its place.
      streams[0]!.socket.destroy();
      await until(() => expect(t.app.connections.open).toBe(2));
      const metrics = await (await open(t, '127.0.0.2')).send('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n');
      expect(metrics).toMatch(/^HTTP\/1\.1 200 /);
      expect(metrics).toContain('berth_connections_refused_total{reason="process"} 1\n');
      expect(metrics).toContain('berth_connections_refused_total{reason="address"} 0\n');
      expect(metrics).toContain('berth_connections_idle_closed_total 1\n');
      expect(metrics).toMatch(/berth_connections_open\{state="all"\} 3\n/);
    },
    SLOW_MS,
  );
});

describe('TRUST_PROXY', () => {
  const CHEAP = '/module-categories';
  const BAD = { token: 'berth_knope_not-a-valid-secret-at-all-0000' };
  const FAILED_AUTH_MAX = 2;
  /** FAILED_AUTH_MAX failures and one more: the next request from that address is blocked. */
  const fail = async (opts: { localAddress?: string; headers?: Record<string, string> }) => {
    for (let i = 0; i <= FAILED_AUTH_MAX; i++) expectError(await call(t, CHEAP, { ...opts, ...BAD }), 401);
  };
  const isBlocked = async (opts: { localAddress?: string; headers?: Record<string, string> }) => {
    const res = await call(t, CHEAP, { ...opts, ...BAD });
    if (res.status === 429) expectError(res, 429, 'http:request:rate-limited');
    else expectError(res, 401, 'auth:token:invalid');
    return res.status === 429;
  };
  const xff = (value: string) => ({ headers: { 'x-forwarded-for': value } });
  let t: Server;

  it(
    'blocks the forwarded client, not the proxy, after failed authentications; the nearest untrusted hop counts',
    async () => {
      t = await app({
        TRUST_PROXY: '127.0.0.1, 10.0.0.0/8',
        FAILED_AUTH_MAX,
        FAILED_AUTH_WINDOW_MS: 60_000,
        MAX_CONNECTIONS_PER_ADDRESS: 2,
      });
      // The viewer's token is known valid from now on (it may pass a blocked address).
      expect((await call(t, CHEAP, { token: TOKENS.viewer, ...xff('203.0.113.7') })).status).toBe(200);
      // A peer that is not trusted cannot pose as another client: its X-Forwarded-For is ignored.
      await fail({ localAddress: '127.0.0.2', ...xff('203.0.113.66') });
      expect(await isBlocked({ localAddress: '127.0.0.2', ...xff('198.51.100.1') })).toBe(true);
      expect(await isBlocked({ localAddress: '127.0.0.1', ...xff('203.0.113.66') })).toBe(false);

      // Through the trusted proxy: 203.0.113.7 is blocked, its neighbours behind the same proxy are not.
      await fail(xff('203.0.113.7'));
      expect(await isBlocked(xff('203.0.113.7'))).toBe(true);
      expect(await isBlocked(xff('203.0.113.8'))).toBe(false);
      expect(await isBlocked({})).toBe(false);
      // The known token still gets through from the blocked client.
      expect((await call(t, CHEAP, { token: TOKENS.viewer, ...xff('203.0.113.7') })).status).toBe(200);

      // The nearest untrusted hop is the client: what it claims further left is not believed…
      expect(await isBlocked(xff('203.0.113.7, 198.51.100.9'))).toBe(false);
      // …while trusted hops (10.0.0.0/8) are skipped to reach it.
      expect(await isBlocked(xff('198.51.100.9, 203.0.113.7, 10.1.2.3'))).toBe(true);
    },
    SLOW_MS,
  );

  it(
    'exempts a trusted proxy from MAX_CONNECTIONS_PER_ADDRESS (it carries many clients)',
    async () => {
      t = await app({ TRUST_PROXY: '127.0.0.1', MAX_CONNECTIONS_PER_ADDRESS: 2 });
      const viaProxy = [await open(t), await open(t), await open(t), await open(t)];
      for (const c of viaProxy) await expectServed(c);
      expect(t.app.connections.openFrom('127.0.0.1')).toBe(0);
      // Its neighbour on 127.0.0.2 is not a proxy: capped at 2.
      const direct = [await open(t, '127.0.0.2'), await open(t, '127.0.0.2')];
      for (const c of direct) await expectServed(c);
      await expectRefused(await open(t, '127.0.0.2'));
      expect(t.app.connections.refused).toEqual({ address: 1, process: 0 });
    },
    SLOW_MS,
  );
});
