import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AwsAccount, AwsClients } from '../../src/providers/aws/clients.js';
import { Route53DnsZone } from '../../src/providers/aws/domains/dns-zone.js';
import type { FakeAws } from '../support/fake-aws/index.js';
import { startFakeAwsClients, stopFakeAwsClients } from '../support/fake-aws-clients.js';
import { providerFailure } from '../support/provider-failure.js';

let aws: FakeAws;
let clients: AwsClients;

function zone(): Route53DnsZone {
  const account: AwsAccount = {
    id: 'acct-aws',
    region: 'eu-west-1',
    roleArn: null,
    externalId: null,
    endpoint: aws.endpoint,
  };
  return new Route53DnsZone(clients.route53(account), 5_000);
}

beforeEach(async () => {
  ({ aws, clients } = await startFakeAwsClients());
});

afterEach(async () => {
  await stopFakeAwsClients(aws, clients);
});

describe('Route 53 DNS zone', () => {
  it('UPSERTs each record into the longest public hosted zone holding its name, one change batch per zone', async () => {
    const parent = aws.route53.createHostedZone('example.com');
    const child = aws.route53.createHostedZone('apps.example.com');
    aws.route53.createHostedZone('apps.example.com', { privateZone: true });
    aws.route53.createHostedZone('example-other.com');
    await zone().upsert([
      { name: '_a.api.apps.example.com', type: 'CNAME', value: '_x.acm-validations.aws' },
      { name: '_b.example.com.', type: 'CNAME', value: '_y.acm-validations.aws' },
      { name: '_berth-verification.apps.example.com', type: 'TXT', value: 'berth-verification="quoted"' },
    ]);
    const changes = aws.callsTo('ChangeResourceRecordSets');
    expect(changes.map((c) => c.input.HostedZoneId)).toEqual([child, parent]);
    expect(aws.route53.findRecord('_a.api.apps.example.com', 'CNAME')).toMatchObject({
      ttl: 300,
      values: ['_x.acm-validations.aws'],
    });
    expect(aws.route53.records(child).map((r) => r.name)).toContain('_a.api.apps.example.com.');
    expect(aws.route53.records(parent).map((r) => r.name)).toContain('_b.example.com.');
    expect(aws.route53.findRecord('_berth-verification.apps.example.com', 'TXT')?.values).toEqual([
      '"berth-verification=\\"quoted\\""',
    ]);
  });

  it('replaces an existing record set (UPSERT), so a retry can run any number of times', async () => {
    const id = aws.route53.createHostedZone('example.com');
    aws.route53.putRecord(id, { name: '_a.example.com', type: 'CNAME', ttl: 60, values: ['old.example.com'] });
    const record = { name: '_a.example.com', type: 'CNAME', value: '_new.acm-validations.aws' };
    await zone().upsert([record]);
    await zone().upsert([record]);
    expect(aws.route53.findRecord('_a.example.com', 'CNAME')?.values).toEqual(['_new.acm-validations.aws']);
  });

  it('retries throttling (Throttling, PriorRequestNotComplete) with backoff', async () => {
    aws.route53.createHostedZone('example.com');
    aws.failNext('ChangeResourceRecordSets', { code: 'Throttling', times: 1 });
    aws.failNext('ChangeResourceRecordSets', { code: 'PriorRequestNotComplete', times: 1 });
    await zone().upsert([{ name: '_a.example.com', type: 'CNAME', value: '_v.acm-validations.aws' }]);
    expect(aws.callsTo('ChangeResourceRecordSets').map((c) => c.errorCode ?? 'ok')).toEqual([
      'Throttling',
      'PriorRequestNotComplete',
      'ok',
    ]);
  });

  it('fails with a ProviderError, writing nothing, when no zone holds the name or Route 53 refuses the batch', async () => {
    const none = await providerFailure(
      zone().upsert([{ name: '_a.nowhere.example', type: 'CNAME', value: 'x.example' }]),
    );
    expect(none).toMatchObject({ service: 'dns-zone', provider: 'aws' });
    expect(none.message).toMatch(/No public Route 53 hosted zone/);

    const id = aws.route53.createHostedZone('example.com');
    aws.route53.putRecord(id, { name: 'taken.example.com', type: 'A', ttl: 60, values: ['192.0.2.1'] });
    const refused = await providerFailure(
      zone().upsert([
        { name: '_ok.example.com', type: 'CNAME', value: 'x.example.com' },
        { name: 'taken.example.com', type: 'CNAME', value: 'y.example.com' },
      ]),
    );
    expect(refused.details).toMatchObject({
      operation: 'ChangeResourceRecordSets',
      awsCode: 'InvalidChangeBatch',
      httpStatus: 400,
    });
    expect(aws.route53.findRecord('_ok.example.com', 'CNAME')).toBeUndefined();

    aws.failNext('ListHostedZonesByName', { code: 'AccessDenied', status: 403 });
    expect(
      (await providerFailure(zone().upsert([{ name: '_c.example.com', type: 'CNAME', value: 'x.example.com' }])))
        .details.awsCode,
    ).toBe('AccessDenied');
  });

  it('leaves checks to public DNS', async () => {
    expect(await zone().checkAll([{ name: 'a.example.com', type: 'CNAME', value: 'b.example.com' }])).toEqual([
      undefined,
    ]);
  });
});
