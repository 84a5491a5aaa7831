import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServices } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { domainWorld } from '../support/domain-world.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { ORG_A, TOKENS } from '../support/world.js';

const arn = (n: number) => `arn:aws:acm:eu-west-1:123456789012:certificate/acm-${n}`;
const CERTS = [1, 2, 3, 4, 5, 6];

let t: TestApp;
let aws: FakeAws;
let dns: TestDnsServer;
let zoneId: string;

beforeAll(async () => {
  aws = await startFakeAws();
  dns = await startDnsServer();
  t = await startTestApp({
    fixture: domainWorld({
      cloudAccounts: [
        { id: 'acct-a-aws', organizationId: ORG_A, provider: 'aws', region: 'eu-west-1', endpoint: aws.endpoint },
      ],
      certificates: CERTS.map((n) => ({
        id: `cert-acm-${n}`,
        moduleInstanceId: 'mi-a-web',
        domainName: `m${n}.acme.example`,
        status: 'PENDINGVALIDATION',
        arn: arn(n),
      })),
      domains: CERTS.map((n) => ({
        id: `d-m${n}`,
        moduleInstanceId: 'mi-a-worker',
        domainName: `m${n}.acme.example`,
        // The certificate of m6 serves a domain the user manages: nothing to publish.
        managedByService: n !== 6,
        certificateId: `cert-acm-${n}`,
        targetDnsName: 'lb-1.elb.example',
      })),
    }),
    config: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: 400, DNS_CACHE_TTL_MS: 0 },
    services: (store, config) =>
      createServices(store, config, {
        providers: { aws: { credentials: { ...FAKE_CREDENTIALS }, retryStrategy: new ConfiguredRetryStrategy(3, 5) } },
      }),
  });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
  await aws?.close();
});
beforeEach(() => {
  aws.clearFaults();
  aws.clearCalls();
  dns.setRecords([]);
  dns.setBlackhole(false);
  zoneId = aws.route53.hostedZones()[0]?.id ?? aws.route53.createHostedZone('acme.example');
  for (const n of CERTS) {
    if (aws.acm.get(arn(n)) === undefined)
      aws.acm.addCertificate({ arn: arn(n), domainName: `m${n}.acme.example` }, 'eu-west-1');
  }
});

const retry = (id: string, token: string = TOKENS.owner) =>
  t.request('POST', `/managed-certificates/${id}/retry-validation`, { token });
const stored = (id: string) =>
  t.store.db.selectFrom('certificates').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('retry-validation with the aws providers (ACM, Route 53)', () => {
  it("publishes ACM's validation records in the Route 53 zone of a managed domain and answers ACM's status", async () => {
    const res = await retry('cert-acm-1');
    expect(res.body).toEqual({ data: { certificateId: 'cert-acm-1', status: 'PENDINGVALIDATION' } });
    const wanted = aws.acm.get(arn(1))!.domainValidationOptions[0]!.resourceRecord!;
    const record = aws.route53.findRecord(wanted.name, 'CNAME');
    expect(record?.values).toEqual([wanted.value.replace(/\.$/, '')]);
    expect(aws.callsTo('ChangeResourceRecordSets')[0]!.input.HostedZoneId).toBe(zoneId);
    expect(aws.callsTo('DescribeCertificate')[0]).toMatchObject({
      region: 'eu-west-1',
      input: { CertificateArn: arn(1) },
    });
    // ACM's records are kept, so the domain list shows what ACM asks for.
    expect((await stored('cert-acm-1')).validation_records).toEqual([
      { name: wanted.name.replace(/\.$/, ''), type: 'CNAME', value: wanted.value.replace(/\.$/, '') },
    ]);
  });

  it("answers ISSUED, with ACM's dates, once ACM has validated the certificate", async () => {
    aws.acm.setStatus(arn(2), 'ISSUED', '2026-03-01T12:00:00Z');
    expect((await retry('cert-acm-2')).body.data.status).toBe('ISSUED');
    const row = await stored('cert-acm-2');
    expect(new Date(row.issued_at!).toISOString()).toBe('2026-03-01T12:00:00.000Z');
    expect(row.expires_at).not.toBeNull();
    expectError(await retry('cert-acm-2'), 409, 'certificates:certificate:not-pending-validation');
  });

  it('makes one ACM call and one Route 53 change for ten concurrent retries', async () => {
    aws.delay('DescribeCertificate', 300, { times: 1 });
    const results = await Promise.all(Array.from({ length: 10 }, () => retry('cert-acm-3')));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(1);
    expect(aws.callsTo('ChangeResourceRecordSets')).toHaveLength(1);
    expect((await stored('cert-acm-3')).validation_attempts).toBe(1);
  });

  it('retries a throttled ACM call and then answers', async () => {
    aws.failNext('DescribeCertificate', { code: 'ThrottlingException', times: 2 });
    expect((await retry('cert-acm-4')).status).toBe(200);
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(3);
  });

  it('answers 502 certificates:authority:failed when ACM keeps failing, writing nothing anywhere', async () => {
    const before = await stored('cert-acm-5');
    aws.failNext('DescribeCertificate', { code: 'ThrottlingException', times: 3 });
    const res = await retry('cert-acm-5');
    expectError(res, 502, 'certificates:authority:failed');
    expect(res.body.description).toBe('AWS DescribeCertificate failed: ThrottlingException.');
    expect(await stored('cert-acm-5')).toEqual(before);
    expect(aws.callsTo('ChangeResourceRecordSets')).toHaveLength(0);

    aws.failNext('DescribeCertificate', { code: 'AccessDeniedException', message: 'not allowed' });
    const denied = await retry('cert-acm-5', TOKENS.superadmin);
    expectError(denied, 502, 'certificates:authority:failed');
    expect(denied.body.metadata).toMatchObject({
      provider: 'aws',
      operation: 'DescribeCertificate',
      awsCode: 'AccessDeniedException',
    });
    expect(denied.body.description).toBe('AWS DescribeCertificate failed: AccessDeniedException: not allowed');
  });

  it('answers 502 certificates:dns-zone:failed when Route 53 refuses the change, leaving the certificate as it was', async () => {
    const before = await stored('cert-acm-5');
    aws.failNext('ChangeResourceRecordSets', { code: 'InvalidChangeBatch', message: 'RRSet conflicts' });
    const res = await retry('cert-acm-5');
    expectError(res, 502, 'certificates:dns-zone:failed');
    expect(res.body.description).toBe('AWS ChangeResourceRecordSets failed: InvalidChangeBatch.');
    expect(await stored('cert-acm-5')).toEqual(before);
    // The lease was released: the next retry works.
    expect((await retry('cert-acm-5')).status).toBe(200);
  });

  it('publishes nothing for a certificate whose domains the user manages', async () => {
    expect((await retry('cert-acm-6')).status).toBe(200);
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(1);
    expect(aws.callsTo('ChangeResourceRecordSets')).toHaveLength(0);
  });

  it('uses the local authority for a certificate without an ACM ARN, and Route 53 for its managed domains', async () => {
    const res = await retry('cert-apps');
    expect(res.status).toBe(200);
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(0);
    expect(aws.route53.findRecord('_v2.apps.acme.example', 'CNAME')?.values).toEqual(['_t2.acm-validations.aws']);
    // Route 53 records are checked on public DNS, where the test server does not serve them yet.
    expect(res.body.data.status).toBe('PENDINGVALIDATION');
    dns.setRecords([{ name: '_v2.apps.acme.example', type: 'CNAME', value: '_t2.acm-validations.aws' }]);
    expect((await retry('cert-apps')).body.data.status).toBe('ISSUED');
  });

  it('checks managed domains of an aws organization on public DNS, not in the local zone', async () => {
    const list = async () =>
      (await t.request('GET', '/domains?moduleInstanceId=mi-a-worker', { token: TOKENS.owner })).body.data.find(
        (d: { id: string }) => d.id === 'd-m1',
      );
    const domain = await list();
    expect(domain.verified).toBe(false);
    dns.setRecords(
      domain.records
        .filter((r: { role: string }) => r.role !== 'CERTIFICATE_VALIDATION')
        .map((r: { name: string; type: 'CNAME' | 'TXT'; expected: string }) => ({
          name: r.name,
          type: r.type,
          value: r.expected,
        })),
    );
    expect((await list()).verified).toBe(true);
  });
});
