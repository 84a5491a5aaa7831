import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { startDnsServer, type TestDnsRecord, type TestDnsServer } from '../support/dns-server.js';
import { domainWorld } from '../support/domain-world.js';
import { TOKENS } from '../support/world.js';

const DNS_TIMEOUT_MS = 400;
/** Scheduling slack on a loaded two-core machine. */
const SLACK_MS = 600;

interface DomainRecord {
  name: string;
  type: string;
  expected: string;
  ownership: string;
  role: string;
}

interface Domain {
  id: string;
  domainName: string;
  verified: boolean;
  records: DomainRecord[];
  [key: string]: unknown;
}

/** 1,000 names in an instance of their own, with look-alikes that sort differently by collation and repeated names. */
function bulkDomains(): { id: string; moduleInstanceId: string; domainName: string; managedByService: boolean }[] {
  const shapes = (i: number) => [
    `n${i}.bulk.example`,
    `n-${i}.bulk.example`,
    `n${i}-x.bulk.example`,
    `a.n${i}.bulk.example`,
  ];
  return Array.from({ length: 1000 }, (_, i) => ({
    id: `bulk-${(i * 7919) % 1000}`,
    moduleInstanceId: 'mi-bulk',
    // Every 50th name repeats the previous one, so the id breaks ties.
    domainName: shapes(i % 50 === 49 ? i - 1 : i)[i % 4]!,
    managedByService: false,
  }));
}

let t: TestApp;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  t = await startTestApp({
    fixture: domainWorld({
      moduleInstances: [{ id: 'mi-bulk', environmentId: 'env-a', name: 'bulk' }],
      domains: bulkDomains(),
    }),
    config: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS, DNS_CACHE_TTL_MS: 0 },
  });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});
beforeEach(() => {
  dns.setBlackhole(false);
  dns.setRecords([]);
});

const list = (query: string, token: string = TOKENS.owner) => t.request('GET', `/domains?${query}`, { token });

async function domainsOf(instance: string, token: string = TOKENS.owner): Promise<Map<string, Domain>> {
  const res = await list(`moduleInstanceId=${instance}&limit=100`, token);
  expect(res.status).toBe(200);
  return new Map((res.body.data as Domain[]).map((d) => [d.domainName, d]));
}

/** The routing and ownership records of a domain, as the test DNS server should serve them. */
function published(domain: Domain, targetAddress = '192.0.2.1'): TestDnsRecord[] {
  const out: TestDnsRecord[] = [];
  for (const r of domain.records) {
    if (r.role === 'CERTIFICATE_VALIDATION') continue;
    if (r.type === 'A') {
      out.push({ name: r.name, type: 'A', value: targetAddress }, { name: r.expected, type: 'A', value: '192.0.2.1' });
    } else {
      out.push({ name: r.name, type: r.type as 'TXT' | 'CNAME', value: r.expected });
    }
  }
  return out;
}

describe('GET /domains: the domains of a module instance', () => {
  it("answers each domain with exactly the spec's fields, the records to publish and its certificate", async () => {
    const res = await list('moduleInstanceId=mi-a-web');
    expect(res.status).toBe(200);
    const www = (res.body.data as Domain[]).find((d) => d.id === 'd-www')!;
    const ownership = www.records.find((r) => r.role === 'OWNERSHIP_VERIFICATION')!;
    expect(www).toEqual({
      id: 'd-www',
      domainName: 'www.acme.example',
      url: 'https://www.acme.example',
      verified: false,
      managedByService: false,
      moduleInstanceId: 'mi-a-web',
      records: [
        { name: 'www.acme.example', type: 'CNAME', expected: 'lb-1.elb.example', ownership: 'USER', role: 'ROUTING' },
        {
          name: '_berth-verification.www.acme.example',
          type: 'TXT',
          expected: ownership.expected,
          ownership: 'USER',
          role: 'OWNERSHIP_VERIFICATION',
        },
        {
          name: '_v1.www.acme.example',
          type: 'CNAME',
          expected: '_t1.acm-validations.aws',
          ownership: 'USER',
          role: 'CERTIFICATE_VALIDATION',
        },
      ],
      certificate: {
        arn: 'arn:aws:acm:eu-west-1:111122223333:certificate/www',
        status: 'ISSUED',
        issuedAt: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-04-01T00:00:00.000Z',
      },
      targetDnsName: 'lb-1.elb.example',
    });
    expect(ownership.expected).toMatch(/^berth-verification=[A-Za-z0-9_-]{32}$/);
  });

  it('orders by domainName then id and counts them', async () => {
    const res = await list('moduleInstanceId=mi-a-web');
    expect(res.body.data.map((d: Domain) => d.domainName)).toEqual([
      '*.apps.acme.example',
      'acme.example',
      'api.apps.acme.example',
      'bare.acme.example',
      'www.acme.example',
    ]);
    expect(res.body.meta).toEqual({ limit: 25, totalCount: 5 });
  });

  it('routes through an alias A record when the domain has a target zone, and omits routing without a target', async () => {
    const domains = await domainsOf('mi-a-web');
    const apex = domains.get('acme.example')!;
    expect(apex.records[0]).toEqual({
      name: 'acme.example',
      type: 'A',
      expected: 'lb-1.elb.example',
      ownership: 'USER',
      role: 'ROUTING',
    });
    expect(apex.targetZoneId).toBe('ZLB1');
    const bare = domains.get('bare.acme.example')!;
    expect(bare.records.map((r) => r.role)).toEqual(['OWNERSHIP_VERIFICATION']);
    expect(bare.targetDnsName).toBeUndefined();
    expect(bare.certificate).toBeUndefined();
    expect(bare.parent).toBeUndefined();
  });

  it("marks every record of a managed domain as the service's, and shows only the certificate fields it has", async () => {
    const apps = (await domainsOf('mi-a-web')).get('*.apps.acme.example')!;
    expect(apps.managedByService).toBe(true);
    expect(apps.url).toBe('https://*.apps.acme.example');
    expect(apps.records.every((r) => r.ownership === 'SERVICE')).toBe(true);
    expect(apps.records.map((r) => [r.role, r.name])).toEqual([
      ['ROUTING', '*.apps.acme.example'],
      ['OWNERSHIP_VERIFICATION', '_berth-verification.apps.acme.example'],
      ['CERTIFICATE_VALIDATION', '_v2.apps.acme.example'],
    ]);
    expect(apps.certificate).toEqual({ status: 'PENDINGVALIDATION' });
  });

  it('names the parent wildcard of a nested domain, in the same instance or another one of the organization', async () => {
    const web = await domainsOf('mi-a-web');
    const parentInWeb = { name: 'web', projectId: 'prj-a', environmentId: 'env-a', moduleInstanceId: 'mi-a-web' };
    expect(web.get('api.apps.acme.example')).toMatchObject({
      parent: parentInWeb,
      parentDomainName: '*.apps.acme.example',
    });
    expect(web.get('*.apps.acme.example')!.parent).toBeUndefined();
    expect(web.get('www.acme.example')!.parent).toBeUndefined();

    const worker = await domainsOf('mi-a-worker');
    expect(worker.get('admin.apps.acme.example')).toMatchObject({
      parent: parentInWeb,
      parentDomainName: '*.apps.acme.example',
    });
  });

  it("never names another organization's wildcard as a parent", async () => {
    const shop = await domainsOf('mi-b-shop', TOKENS.otherAdmin);
    const underA = shop.get('b.apps.acme.example')!;
    expect(underA.parent).toBeUndefined();
    expect(underA.parentDomainName).toBeUndefined();
    expect(JSON.stringify([...shop.values()])).not.toMatch(/mi-a-|prj-a|env-a/);
    expect(shop.get('shop.beta.example')).toMatchObject({
      parent: { name: 'shop', projectId: 'prj-b', environmentId: 'env-b', moduleInstanceId: 'mi-b-shop' },
      parentDomainName: '*.beta.example',
    });
  });
});

describe('GET /domains: verified, from real DNS', () => {
  it('is true once the routing CNAME and the ownership TXT resolve as expected', async () => {
    const www = (await domainsOf('mi-a-web')).get('www.acme.example')!;
    expect(www.verified).toBe(false);
    dns.setRecords(published(www));
    expect((await domainsOf('mi-a-web')).get('www.acme.example')!.verified).toBe(true);
  });

  it('is false when a record is absent', async () => {
    const www = (await domainsOf('mi-a-web')).get('www.acme.example')!;
    dns.setRecords(published(www).filter((r) => r.type !== 'TXT'));
    expect((await domainsOf('mi-a-web')).get('www.acme.example')!.verified).toBe(false);
    dns.setRecords(published(www).filter((r) => r.type !== 'CNAME'));
    expect((await domainsOf('mi-a-web')).get('www.acme.example')!.verified).toBe(false);
  });

  it('is false when a record has the wrong value', async () => {
    const www = (await domainsOf('mi-a-web')).get('www.acme.example')!;
    dns.setRecords(
      published(www).map((r) => (r.type === 'TXT' ? { ...r, value: 'berth-verification=someone-else' } : r)),
    );
    expect((await domainsOf('mi-a-web')).get('www.acme.example')!.verified).toBe(false);
    dns.setRecords(published(www).map((r) => (r.type === 'CNAME' ? { ...r, value: 'elsewhere.example' } : r)));
    expect((await domainsOf('mi-a-web')).get('www.acme.example')!.verified).toBe(false);
  });

  it('checks an alias A record by the addresses of its target', async () => {
    const apex = (await domainsOf('mi-a-web')).get('acme.example')!;
    dns.setRecords(published(apex, '192.0.2.1'));
    expect((await domainsOf('mi-a-web')).get('acme.example')!.verified).toBe(true);
    dns.setRecords(published(apex, '198.51.100.7'));
    expect((await domainsOf('mi-a-web')).get('acme.example')!.verified).toBe(false);
  });

  it('is false, and the page still answers in time, when the resolver times out', async () => {
    const www = (await domainsOf('mi-a-web')).get('www.acme.example')!;
    dns.setRecords(published(www));
    dns.setBlackhole(true);
    const started = performance.now();
    const res = await list('moduleInstanceId=mi-a-web');
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.data.find((d: Domain) => d.id === 'd-www').verified).toBe(false);
    // Every record of the page is looked up at once: one timeout, not one per record.
    expect(elapsed).toBeLessThan(DNS_TIMEOUT_MS + SLACK_MS);
  });

  it('checks a managed domain in the local zone, where the service publishes its records, not on public DNS', async () => {
    dns.setBlackhole(true);
    const web = await domainsOf('mi-a-web');
    expect(web.get('*.apps.acme.example')!.verified).toBe(true);
    expect(web.get('api.apps.acme.example')!.verified).toBe(true);

    // A record set written into the zone replaces what the service publishes there.
    await t.store.db
      .insertInto('dns_records')
      .values({ name: 'api.apps.acme.example', type: 'CNAME', value: 'hijacked.example' })
      .execute();
    try {
      expect((await domainsOf('mi-a-web')).get('api.apps.acme.example')!.verified).toBe(false);
    } finally {
      await t.store.db.deleteFrom('dns_records').where('name', '=', 'api.apps.acme.example').execute();
    }
  });
});

describe('GET /domains: paging', () => {
  it('walks 1,000 domains with limit=7: each exactly once, in order, with a correct totalCount', async () => {
    const expected = bulkDomains()
      .map((d) => [d.domainName, d.id] as const)
      .sort(([an, ai], [bn, bi]) => (an < bn ? -1 : an > bn ? 1 : ai < bi ? -1 : ai > bi ? 1 : 0))
      .map(([, id]) => id);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await list(
        `moduleInstanceId=mi-bulk&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.meta.limit).toBe(7);
      expect(res.body.meta.totalCount).toBe(1000);
      seen.push(...res.body.data.map((d: Domain) => d.id));
      cursor = res.body.meta.nextCursor;
      pages += 1;
      if (cursor === undefined) expect('nextCursor' in res.body.meta).toBe(false);
      else expect(res.body.data).toHaveLength(7);
    } while (cursor !== undefined && pages < 200);
    expect(pages).toBe(Math.ceil(1000 / 7));
    expect(seen).toEqual(expected);
  });

  it('uses 25 by default and at most 100', async () => {
    const first = await list('moduleInstanceId=mi-bulk');
    expect(first.body.data).toHaveLength(25);
    expect(first.body.meta.limit).toBe(25);
    expect((await list('moduleInstanceId=mi-bulk&limit=100')).body.data).toHaveLength(100);
    expectError(await list('moduleInstanceId=mi-bulk&limit=101'), 400, 'validation:request:invalid-query');
    expectError(await list('moduleInstanceId=mi-bulk&limit=0'), 400, 'validation:request:invalid-query');
    expectError(await list('moduleInstanceId=mi-bulk&limit=ten'), 400, 'validation:request:invalid-query');
  });

  it('answers an empty last page without nextCursor, and an empty instance with totalCount 0', async () => {
    const res = await list('moduleInstanceId=mi-a-empty');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], meta: { limit: 25, totalCount: 0 } });
  });

  it('refuses a tampered, made-up or truncated cursor with 400', async () => {
    const cursor: string = (await list('moduleInstanceId=mi-bulk&limit=3')).body.meta.nextCursor;
    const [payload, mac] = cursor.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify([1, 'mi-bulk', 'zzz', 'x'])).toString('base64url');
    const flipped = `${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${mac}`;
    for (const bad of [flipped, `${forged}.${mac}`, payload, `${cursor}x`, 'not-a-cursor', 'a.b.c', 'x'.repeat(3000)]) {
      const res = await list(`moduleInstanceId=mi-bulk&cursor=${encodeURIComponent(bad)}`);
      expectError(res, 400, bad.length > 2048 ? 'validation:request:invalid-query' : 'domains:cursor:invalid');
    }
  });

  it('refuses a cursor of another instance, and never pages into another organization', async () => {
    const cursor: string = (await list('moduleInstanceId=mi-bulk&limit=3')).body.meta.nextCursor;
    expectError(
      await list(`moduleInstanceId=mi-a-web&cursor=${encodeURIComponent(cursor)}`),
      400,
      'domains:cursor:invalid',
    );
    const other = await list(`moduleInstanceId=mi-b-shop&cursor=${encodeURIComponent(cursor)}`, TOKENS.otherAdmin);
    expectError(other, 400, 'domains:cursor:invalid');
    // And org B cannot read org A's instance with A's own cursor either.
    expectError(
      await list(`moduleInstanceId=mi-bulk&cursor=${encodeURIComponent(cursor)}`, TOKENS.otherAdmin),
      404,
      'domains:module-instance:not-found',
    );
  });
});

describe('GET /domains: errors and tenants', () => {
  it('answers 400 naming moduleInstanceId when it is missing', async () => {
    const res = await t.request('GET', '/domains', { token: TOKENS.owner });
    expectError(res, 400, 'validation:request:invalid-query');
    expect(res.body.details[0].items).toContain('query.moduleInstanceId: is required');
  });

  it("answers another organization's instance exactly like an unknown one", async () => {
    const other = await list('moduleInstanceId=mi-b-shop');
    const unknown = await list('moduleInstanceId=mi-nope');
    expectError(other, 404, 'domains:module-instance:not-found');
    expectError(unknown, 404, 'domains:module-instance:not-found');
    expect({ ...other.body, requestId: undefined }).toEqual({ ...unknown.body, requestId: undefined });
  });

  it('lets every member read, and keys scoped to another organization see nothing', async () => {
    expect((await list('moduleInstanceId=mi-a-web', TOKENS.viewer)).status).toBe(200);
    expect((await list('moduleInstanceId=mi-a-web', TOKENS.member)).status).toBe(200);
    expect((await list('moduleInstanceId=mi-b-shop', TOKENS.superadmin)).status).toBe(200);
    expectError(await list('moduleInstanceId=mi-a-web', TOKENS.otherAdmin), 404, 'domains:module-instance:not-found');
  });

  it('answers 401 without a token and 400 for unknown query parameters', async () => {
    expectError(await t.request('GET', '/domains?moduleInstanceId=mi-a-web'), 401, 'auth:token:missing');
    expectError(await list('moduleInstanceId=mi-a-web&page=2'), 400, 'validation:request:invalid-query');
  });
});
