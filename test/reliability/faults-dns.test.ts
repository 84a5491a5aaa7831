// Faults of the DNS resolver Berth is configured with (DNS_SERVERS): a server that never answers
// (blackhole) and one that answers SERVFAIL. Domains read as not verified, certificate retries
// answer, both within the lookup bound, and the service stays healthy meanwhile.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsRecord, type TestDnsServer } from '../support/dns-server.js';
import { domainWorld } from '../support/domain-world.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { recordLatency, timed } from './support/faults-world.js';
import { FULL } from './support/summary.js';

const DNS_TIMEOUT_MS = 300;
const SLACK_MS = 1_500;
/** A page's lookups run at once, each bounded by DNS_TIMEOUT_MS. */
const BOUND_MS = DNS_TIMEOUT_MS + SLACK_MS;
const OWN_RECORD = { name: '_v3.own.acme.example', type: 'CNAME', value: '_t3.acm-validations.aws' };

let dns: TestDnsServer;
let berth: Berth;

beforeAll(async () => {
  dns = await startDnsServer();
  berth = await startBerth({
    fixture: domainWorld({
      // A pending certificate of a domain the user manages: a retry checks its record through public DNS.
      certificates: [
        {
          id: 'cert-own',
          moduleInstanceId: 'mi-a-web',
          domainName: 'own.acme.example',
          status: 'PENDINGVALIDATION',
          validationRecords: [OWN_RECORD],
        },
      ],
      domains: [
        {
          id: 'd-own',
          moduleInstanceId: 'mi-a-web',
          domainName: 'own.acme.example',
          managedByService: false,
          certificateId: 'cert-own',
          targetDnsName: 'lb-1.elb.example',
        },
      ],
    }),
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS), DNS_CACHE_TTL_MS: '0' },
  });
});
afterAll(async () => {
  await berth?.close();
  await dns?.close();
});
beforeEach(() => {
  dns.setBlackhole(false);
  dns.setServfail(false);
});

interface Domain {
  id: string;
  verified: boolean;
  records: { name: string; type: string; expected: string }[];
}
const listDomains = () =>
  berth.request<{ data: Domain[] }>('GET', '/domains?moduleInstanceId=mi-a-web&limit=100', { token: TOKENS.owner });
const retry = () => berth.request('POST', '/managed-certificates/cert-own/retry-validation', { token: TOKENS.owner });

/** Publishes every record d-www needs, so it verifies while DNS answers. */
async function publishWww(): Promise<void> {
  const www = (await listDomains()).body.data.find((d) => d.id === 'd-www')!;
  dns.setRecords(
    www.records.map((r): TestDnsRecord => ({ name: r.name, type: r.type as TestDnsRecord['type'], value: r.expected })),
  );
}

const faults = [
  { name: 'blackhole (no answer)', apply: () => dns.setBlackhole(true) },
  { name: 'SERVFAIL', apply: () => dns.setServfail(true) },
];

describe('GET /domains while DNS fails', () => {
  it('verifies a domain whose records DNS answers (the check goes through the configured server)', async () => {
    await publishWww();
    const res = await listDomains();
    expect(res.status).toBe(200);
    expect(res.body.data.find((d) => d.id === 'd-www')?.verified).toBe(true);
  });

  it.each(faults)(
    '$name: answers within the lookup bound with verified false, not an error',
    async ({ name, apply }) => {
      await publishWww();
      apply();
      const before = dns.queries();
      const { ms, value: res } = await timed(listDomains);
      expect(res.status).toBe(200);
      expect(res.body.data.find((d) => d.id === 'd-www')?.verified).toBe(false);
      expect(dns.queries()).toBeGreaterThan(before);
      recordLatency(`GET /domains, DNS ${name} (verified false)`, ms, BOUND_MS);
    },
  );

  it.each(faults)('$name: the service stays healthy while many domain lists wait on DNS', async ({ name, apply }) => {
    apply();
    const rounds = FULL ? 5 : 1;
    const LISTS = 10;
    let slowestProbe = 0;
    let slowestList = 0;
    for (let round = 0; round < rounds; round++) {
      const lists = Array.from({ length: LISTS }, () => timed(listDomains));
      const probes = await Promise.all(Array.from({ length: 5 }, () => timed(() => berth.request('GET', '/healthz'))));
      const answered = await Promise.all(lists);
      for (const p of probes) expect(p.value.status).toBe(200);
      for (const a of answered) expect(a.value.status).toBe(200);
      slowestProbe = Math.max(slowestProbe, ...probes.map((p) => p.ms));
      slowestList = Math.max(slowestList, ...answered.map((a) => a.ms));
    }
    expect((await berth.request('GET', '/readyz')).status).toBe(200);
    recordLatency(`/healthz while ${LISTS} domain lists wait on DNS ${name} (×${rounds})`, slowestProbe, 1_500);
    recordLatency(`${LISTS} concurrent GET /domains, DNS ${name} (×${rounds})`, slowestList, BOUND_MS * 2);
  });
});

describe('certificate retry while DNS fails', () => {
  it.each(faults)('$name: answers the unchanged status within the lookup bound', async ({ name, apply }) => {
    dns.setRecords([OWN_RECORD as TestDnsRecord]);
    apply();
    const { ms, value: res } = await timed(retry);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { certificateId: 'cert-own', status: 'PENDINGVALIDATION' } });
    recordLatency(`certificate retry, DNS ${name} (still pending)`, ms, BOUND_MS);
  });

  it('issues the certificate once DNS answers again (the retry really asks DNS)', async () => {
    dns.setRecords([OWN_RECORD as TestDnsRecord]);
    const res = await retry();
    expect(res.body).toEqual({ data: { certificateId: 'cert-own', status: 'ISSUED' } });
  });
});
