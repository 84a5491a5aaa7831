import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DnsResolver, DnsTimeoutError, type DnsResolverOptions } from '../../src/providers/domains/dns-resolver.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';

const TIMEOUT_MS = 300;
/** Scheduling slack on a loaded two-core machine. */
const SLACK_MS = 250;

let server: TestDnsServer;

beforeAll(async () => {
  server = await startDnsServer();
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.setBlackhole(false);
  server.setRecords([
    { name: '_berth.app.example.com', type: 'TXT', value: 'token-AbC123' },
    { name: 'chunked.example.com', type: 'TXT', value: ['first half,', ' second half'] },
    { name: 'many.example.com', type: 'TXT', value: 'one' },
    { name: 'many.example.com', type: 'TXT', value: 'two' },
    { name: 'www.example.com', type: 'CNAME', value: 'd111.CloudFront.net' },
    { name: 'apex.example.com', type: 'A', value: '192.0.2.10' },
  ]);
});

function resolver(options: Partial<DnsResolverOptions> = {}): DnsResolver {
  return new DnsResolver({ servers: [server.address], timeoutMs: TIMEOUT_MS, cacheTtlMs: 60_000, ...options });
}

describe('DnsResolver lookups', () => {
  it('returns TXT values with their character-strings joined', async () => {
    const dns = resolver();
    expect(await dns.resolveTxt('_berth.app.example.com')).toEqual(['token-AbC123']);
    expect(await dns.resolveTxt('chunked.example.com')).toEqual(['first half, second half']);
    expect((await dns.resolveTxt('many.example.com')).sort()).toEqual(['one', 'two']);
  });

  it('returns CNAME targets and A addresses', async () => {
    const dns = resolver();
    expect(await dns.resolveCname('www.example.com')).toEqual(['d111.CloudFront.net']);
    expect(await dns.resolveA('apex.example.com')).toEqual(['192.0.2.10']);
  });

  it('returns no values for an unknown name and for a name without the type', async () => {
    const dns = resolver();
    expect(await dns.resolveTxt('missing.example.com')).toEqual([]);
    expect(await dns.resolveA('www.example.com')).toEqual([]);
  });

  it('rejects with DnsTimeoutError when the server never answers', async () => {
    server.setBlackhole(true);
    await expect(resolver().resolveTxt('_berth.app.example.com')).rejects.toBeInstanceOf(DnsTimeoutError);
  });
});

describe('DnsResolver.check', () => {
  it('answers match when a record has the expected value', async () => {
    const dns = resolver();
    expect(await dns.check({ name: '_berth.app.example.com', type: 'TXT', expected: 'token-AbC123' })).toBe('match');
    expect(await dns.check({ name: 'many.example.com', type: 'TXT', expected: 'two' })).toBe('match');
    expect(await dns.check({ name: 'apex.example.com', type: 'A', expected: '192.0.2.10' })).toBe('match');
  });

  it('compares CNAME targets without case or trailing dot, and looks names up the same way', async () => {
    const dns = resolver();
    expect(await dns.check({ name: 'WWW.Example.com.', type: 'CNAME', expected: 'd111.cloudfront.NET.' })).toBe(
      'match',
    );
  });

  it('compares TXT values exactly, since validation tokens are case-sensitive', async () => {
    const dns = resolver();
    expect(await dns.check({ name: '_berth.app.example.com', type: 'TXT', expected: 'token-abc123' })).toBe('mismatch');
  });

  it('answers mismatch when records exist but none has the expected value', async () => {
    const dns = resolver();
    expect(await dns.check({ name: 'www.example.com', type: 'CNAME', expected: 'elsewhere.example.net' })).toBe(
      'mismatch',
    );
    expect(await dns.check({ name: 'apex.example.com', type: 'A', expected: '192.0.2.11' })).toBe('mismatch');
  });

  it('answers absent for an unknown name (NXDOMAIN) and for a name without the type (NODATA)', async () => {
    const dns = resolver();
    expect(await dns.check({ name: 'missing.example.com', type: 'TXT', expected: 'x' })).toBe('absent');
    expect(await dns.check({ name: 'www.example.com', type: 'TXT', expected: 'x' })).toBe('absent');
  });

  it('answers timeout within timeoutMs when the server never answers', async () => {
    server.setBlackhole(true);
    const started = performance.now();
    expect(await resolver().check({ name: '_berth.app.example.com', type: 'TXT', expected: 'token-AbC123' })).toBe(
      'timeout',
    );
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('bounds the whole lookup by timeoutMs even when several servers each take that long', async () => {
    const second = await startDnsServer();
    try {
      server.setBlackhole(true);
      second.setBlackhole(true);
      const dns = resolver({ servers: [server.address, second.address] });
      const started = performance.now();
      expect(await dns.check({ name: 'apex.example.com', type: 'A', expected: '192.0.2.10' })).toBe('timeout');
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    } finally {
      await second.close();
    }
  });

  it('answers timeout when the server is unreachable', async () => {
    const gone = await startDnsServer();
    await gone.close();
    const dns = resolver({ servers: [gone.address] });
    expect(await dns.check({ name: 'apex.example.com', type: 'A', expected: '192.0.2.10' })).toBe('timeout');
  });
});

describe('DnsResolver caching', () => {
  it('answers a repeated lookup from the cache without a query', async () => {
    const dns = resolver();
    expect(await dns.resolveTxt('_berth.app.example.com')).toEqual(['token-AbC123']);
    const sent = server.queries();
    expect(await dns.check({ name: '_berth.app.example.com.', type: 'TXT', expected: 'token-AbC123' })).toBe('match');
    expect(await dns.resolveTxt('_BERTH.app.example.com')).toEqual(['token-AbC123']);
    expect(server.queries()).toBe(sent);
  });

  it('caches absent answers too, until cacheTtlMs has passed', async () => {
    let clock = 1_000_000;
    const dns = resolver({ cacheTtlMs: 5_000, now: () => clock });
    const record = { name: 'later.example.com', type: 'TXT', expected: 'v=1' } as const;
    expect(await dns.check(record)).toBe('absent');
    const sent = server.queries();

    server.setRecords([{ name: 'later.example.com', type: 'TXT', value: 'v=1' }]);
    clock += 4_999;
    expect(await dns.check(record)).toBe('absent');
    expect(server.queries()).toBe(sent);

    clock += 1;
    expect(await dns.check(record)).toBe('match');
    expect(server.queries()).toBe(sent + 1);
  });

  it('queries again after clear()', async () => {
    const dns = resolver();
    const record = { name: 'apex.example.com', type: 'A', expected: '192.0.2.20' } as const;
    expect(await dns.check(record)).toBe('mismatch');
    server.setRecords([{ name: 'apex.example.com', type: 'A', value: '192.0.2.20' }]);
    expect(await dns.check(record)).toBe('mismatch');
    dns.clear();
    expect(await dns.check(record)).toBe('match');
  });

  it('does not cache a timeout', async () => {
    const dns = resolver();
    server.setBlackhole(true);
    const record = { name: 'apex.example.com', type: 'A', expected: '192.0.2.10' } as const;
    expect(await dns.check(record)).toBe('timeout');
    server.setBlackhole(false);
    expect(await dns.check(record)).toBe('match');
  });

  it('keeps A, TXT and CNAME answers for one name apart', async () => {
    const dns = resolver();
    expect(await dns.check({ name: 'www.example.com', type: 'CNAME', expected: 'd111.cloudfront.net' })).toBe('match');
    expect(await dns.check({ name: 'www.example.com', type: 'A', expected: '192.0.2.10' })).toBe('absent');
  });

  it('hands out copies, so a caller cannot change the cached answer', async () => {
    const dns = resolver();
    (await dns.resolveA('apex.example.com')).push('203.0.113.1');
    expect(await dns.resolveA('apex.example.com')).toEqual(['192.0.2.10']);
  });
});

describe('DnsResolver coalescing', () => {
  it('sends one query for concurrent identical lookups', async () => {
    const dns = resolver();
    const sent = server.queries();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? dns.check({ name: 'www.example.com', type: 'CNAME', expected: 'd111.cloudfront.net' })
          : dns.resolveCname('WWW.example.com.').then(() => 'match'),
      ),
    );
    expect(answers).toEqual(Array(10).fill('match'));
    expect(server.queries()).toBe(sent + 1);
  });

  it('shares a timeout among concurrent lookups and sends one query', async () => {
    server.setBlackhole(true);
    const dns = resolver();
    const sent = server.queries();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => dns.check({ name: 'apex.example.com', type: 'A', expected: '192.0.2.10' })),
    );
    expect(answers).toEqual(Array(10).fill('timeout'));
    expect(server.queries()).toBe(sent + 1);
  });
});
