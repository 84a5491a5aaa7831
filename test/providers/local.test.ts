import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCertificateAuthority } from '../../src/providers/local/domains/certificate-authority.js';
import type { StoredCertificate } from '../../src/providers/domains/certificate-authority.js';
import { LocalDnsZone } from '../../src/providers/local/domains/dns-zone.js';
import { chooseAwsAccount, parseAcmArn } from '../../src/providers/index.js';
import type { AwsAccount } from '../../src/providers/aws/clients.js';
import type { Store } from '../../src/store/db.js';
import { openSeededStore } from '../support/seeded-store.js';
import { domainWorld } from '../support/domain-world.js';

const NOW = new Date('2026-05-01T08:00:00.000Z');
const pending: StoredCertificate = {
  id: 'c',
  arn: null,
  domainName: 'a.example.com',
  status: 'PENDINGVALIDATION',
  issuedAt: null,
  expiresAt: null,
  validationRecords: [
    { name: '_1.a.example.com', type: 'CNAME', value: '_x.acm-validations.aws' },
    { name: '_2.a.example.com', type: 'CNAME', value: '_y.acm-validations.aws' },
  ],
};

describe('local certificate authority', () => {
  const ca = new LocalCertificateAuthority(() => NOW);

  it('issues a pending certificate for 90 days once every validation record resolves', async () => {
    const current = await ca.describe(pending);
    const checks = pending.validationRecords.map((record) => ({ record, result: 'match' as const }));
    expect(await ca.reevaluate(pending, current, checks)).toEqual({
      status: 'ISSUED',
      issuedAt: NOW,
      expiresAt: new Date('2026-07-30T08:00:00.000Z'),
      validationRecords: pending.validationRecords,
    });
  });

  it.each(['absent', 'mismatch', 'timeout'] as const)('keeps it pending when one record is %s', async (result) => {
    const current = await ca.describe(pending);
    const checks = [
      { record: pending.validationRecords[0]!, result: 'match' as const },
      { record: pending.validationRecords[1]!, result },
    ];
    expect((await ca.reevaluate(pending, current, checks)).status).toBe('PENDINGVALIDATION');
  });

  it('never issues a certificate without validation records, nor one that is not pending', async () => {
    const bare = { ...pending, validationRecords: [] };
    expect((await ca.reevaluate(bare, await ca.describe(bare), [])).status).toBe('PENDINGVALIDATION');
    const failed = { ...pending, status: 'FAILED' as const };
    const checks = pending.validationRecords.map((record) => ({ record, result: 'match' as const }));
    expect((await ca.reevaluate(failed, await ca.describe(failed), checks)).status).toBe('FAILED');
  });
});

describe('local DNS zone', () => {
  let closeStore: (() => Promise<void>) | undefined;
  let store: Store;
  let zone: LocalDnsZone;

  beforeAll(async () => {
    ({ store, close: closeStore } = await openSeededStore(domainWorld()));
    zone = new LocalDnsZone(store.db);
  });
  afterAll(async () => {
    await closeStore?.();
  });

  it('replaces a record set whole on upsert, and answers from it', async () => {
    await zone.upsert([{ name: '_v.X.example.', type: 'cname', value: 'old.example.' }]);
    await zone.upsert([
      { name: '_v.x.example', type: 'CNAME', value: 'New.Example' },
      { name: '_t.x.example', type: 'TXT', value: 'A' },
      { name: '_t.x.example', type: 'TXT', value: 'b' },
    ]);
    const rows = await store.db
      .selectFrom('dns_records')
      .select(['name', 'type', 'value'])
      .orderBy('name')
      .orderBy('value')
      .execute();
    expect(rows).toEqual([
      { name: '_t.x.example', type: 'TXT', value: 'A' },
      { name: '_t.x.example', type: 'TXT', value: 'b' },
      { name: '_v.x.example', type: 'CNAME', value: 'new.example' },
    ]);
    expect(
      await zone.checkAll([
        { name: '_v.x.example', type: 'CNAME', value: 'new.example.' },
        { name: '_v.x.example', type: 'CNAME', value: 'old.example' },
        { name: '_t.x.example', type: 'TXT', value: 'b' },
        { name: '_t.x.example', type: 'TXT', value: 'a' },
        { name: '_missing.x.example', type: 'CNAME', value: 'x' },
        { name: '_v.x.example', type: 'TXT', value: 'x' },
      ]),
    ).toEqual(['match', 'mismatch', 'match', 'mismatch', 'absent', 'absent']);
  });

  it('serves the routing and ownership records of managed domains, and nothing for the others', async () => {
    const api = [
      { name: 'api.apps.acme.example', type: 'CNAME', value: 'lb-1.elb.example' },
      { name: '*.apps.acme.example', type: 'CNAME', value: 'lb-1.elb.example' },
      { name: 'www.acme.example', type: 'CNAME', value: 'lb-1.elb.example' },
      { name: '_v2.apps.acme.example', type: 'CNAME', value: '_t2.acm-validations.aws' },
    ];
    expect(await zone.checkAll(api)).toEqual(['match', 'match', 'absent', 'absent']);
  });
});

describe('choosing the aws account of a certificate', () => {
  const account = (id: string, region: string, roleArn: string | null = null): AwsAccount => ({
    id,
    region,
    roleArn,
    externalId: null,
    endpoint: null,
  });

  it('parses ACM ARNs and nothing else', () => {
    expect(parseAcmArn('arn:aws:acm:eu-west-1:111122223333:certificate/0d3d-6a63')).toEqual({
      partition: 'aws',
      region: 'eu-west-1',
      accountId: '111122223333',
    });
    expect(parseAcmArn('arn:aws-cn:acm:cn-north-1:111122223333:certificate/x')?.partition).toBe('aws-cn');
    expect(parseAcmArn('arn:aws:iam::111122223333:role/x')).toBeNull();
    expect(parseAcmArn(null)).toBeNull();
  });

  it("prefers the account whose role is in the ARN's AWS account, then the ARN's region, then the first by id", () => {
    const arn = parseAcmArn('arn:aws:acm:eu-west-1:111122223333:certificate/x');
    const a = account('a', 'us-east-1');
    const b = account('b', 'eu-west-1');
    const c = account('c', 'us-east-1', 'arn:aws:iam::111122223333:role/berth');
    expect(chooseAwsAccount([a, b, c], arn)?.id).toBe('c');
    expect(chooseAwsAccount([a, b], arn)?.id).toBe('b');
    expect(chooseAwsAccount([b, a], null)?.id).toBe('a');
    expect(chooseAwsAccount([], arn)).toBeUndefined();
  });
});
