// The process's one AWS client factory (real SDK clients against the fake AWS endpoint): one client per account
// settings, service and region; an account whose role, external id, region or endpoint changes gets a new client
// signed with the new settings; at most `maxClients` are kept, and one pushed out or closed is destroyed.
import { ListCertificatesCommand } from '@aws-sdk/client-acm';
import { DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { ListHostedZonesByNameCommand } from '@aws-sdk/client-route-53';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AwsClients, type AwsAccount } from '../../src/providers/aws/clients.js';
import { FAKE_CREDENTIALS, type FakeAws } from '../support/fake-aws/index.js';
import { startFakeAwsClients, stopFakeAwsClients } from '../support/fake-aws-clients.js';

let aws: FakeAws;
let clients: AwsClients;

beforeEach(async () => {
  ({ aws, clients } = await startFakeAwsClients());
});
afterEach(async () => {
  vi.useRealTimers();
  await stopFakeAwsClients(aws, clients);
});

const ROLE_A = 'arn:aws:iam::210987654321:role/berth-a';
const ROLE_B = 'arn:aws:iam::210987654321:role/berth-b';

const account = (extra: Partial<AwsAccount> = {}): AwsAccount => ({
  id: 'acct-1',
  region: 'eu-west-1',
  roleArn: ROLE_A,
  externalId: 'ext-a',
  endpoint: aws.endpoint,
  ...extra,
});

/** Each service's client for an account, and one call through it. */
const SERVICES = {
  acm: {
    op: 'ListCertificates',
    client: (a: AwsAccount) => clients.acm(a, 'eu-west-1'),
    call: (a: AwsAccount) => clients.acm(a, 'eu-west-1').send(new ListCertificatesCommand({})),
  },
  route53: {
    op: 'ListHostedZonesByName',
    client: (a: AwsAccount) => clients.route53(a),
    call: (a: AwsAccount) => clients.route53(a).send(new ListHostedZonesByNameCommand({})),
  },
  logs: {
    op: 'DescribeLogGroups',
    client: (a: AwsAccount) => clients.cloudWatchLogs(a, 'eu-west-1'),
    call: (a: AwsAccount) => clients.cloudWatchLogs(a, 'eu-west-1').send(new DescribeLogGroupsCommand({})),
  },
};

/** The role and external id of the STS grant each call of `op` was signed with (undefined: not an STS key). */
const signedFor = (op: string) =>
  aws.callsTo(op).map((c) => {
    const grant = aws.sts.credentialsFor(c.accessKeyId);
    return grant === undefined ? undefined : [grant.roleArn, grant.externalId];
  });

describe.each(Object.entries(SERVICES))('the %s client of an account', (_name, service) => {
  it('is made once for the same settings: one AssumeRole, every call signed for that role', async () => {
    expect(service.client(account())).toBe(service.client(account()));
    await service.call(account());
    await service.call(account());
    expect(signedFor(service.op)).toEqual([
      [ROLE_A, 'ext-a'],
      [ROLE_A, 'ext-a'],
    ]);
    expect(aws.callsTo('AssumeRole')).toHaveLength(1);
  });

  it('is new, and signed for the new role, after the role ARN and then the external id change', async () => {
    const before = service.client(account());
    await service.call(account());
    expect(service.client(account({ roleArn: ROLE_B }))).not.toBe(before);
    await service.call(account({ roleArn: ROLE_B }));
    expect(service.client(account({ roleArn: ROLE_B, externalId: 'ext-b' }))).not.toBe(
      service.client(account({ roleArn: ROLE_B })),
    );
    await service.call(account({ roleArn: ROLE_B, externalId: 'ext-b' }));
    expect(signedFor(service.op)).toEqual([
      [ROLE_A, 'ext-a'],
      [ROLE_B, 'ext-a'],
      [ROLE_B, 'ext-b'],
    ]);
    expect(aws.callsTo('AssumeRole').map((c) => [c.input.RoleArn, c.input.ExternalId])).toEqual([
      [ROLE_A, 'ext-a'],
      [ROLE_B, 'ext-a'],
      [ROLE_B, 'ext-b'],
    ]);
  });

  it('is new when the account drops its role, its region or its endpoint changes', async () => {
    const before = service.client(account());
    expect(service.client(account({ roleArn: null, externalId: null }))).not.toBe(before);
    expect(service.client(account({ region: 'us-west-2' }))).not.toBe(before);
    expect(service.client(account({ endpoint: 'http://127.0.0.1:9' }))).not.toBe(before);
    await service.call(account({ roleArn: null, externalId: null }));
    expect(aws.callsTo(service.op).map((c) => c.accessKeyId)).toEqual([FAKE_CREDENTIALS.accessKeyId]);
  });
});

describe('the factory', () => {
  it('shares one credentials provider between the services and regions of an account: one AssumeRole', async () => {
    await SERVICES.acm.call(account());
    await SERVICES.route53.call(account());
    await SERVICES.logs.call(account());
    await clients.cloudWatchLogs(account(), 'ap-south-1').send(new DescribeLogGroupsCommand({}));
    expect(aws.callsTo('AssumeRole')).toHaveLength(1);
  });

  it('keeps at most maxClients, destroys the one pushed out once a call could have ended, and the rest on close', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const small = new AwsClients({ maxAttempts: 1, callTimeoutMs: 1_000, maxClients: 2 });
    const acc = (id: string) => account({ id, roleArn: null, externalId: null });
    const a = small.cloudWatchLogs(acc('a'), 'us-east-1');
    const b = small.cloudWatchLogs(acc('b'), 'us-east-1');
    const destroyed = { a: vi.spyOn(a, 'destroy'), b: vi.spyOn(b, 'destroy') };
    expect(small.cloudWatchLogs(acc('a'), 'us-east-1')).toBe(a); // now b is the least recently used
    const c = small.cloudWatchLogs(acc('c'), 'us-east-1');
    const destroyedC = vi.spyOn(c, 'destroy');
    expect(small.size).toBe(2);

    vi.advanceTimersByTime(999);
    expect(destroyed.b).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(destroyed.b).toHaveBeenCalledOnce();
    expect(destroyed.a).not.toHaveBeenCalled();
    expect(small.cloudWatchLogs(acc('b'), 'us-east-1')).not.toBe(b);

    small.close();
    expect(destroyed.a).toHaveBeenCalledOnce();
    expect(destroyedC).toHaveBeenCalledOnce();
    expect(small.size).toBe(0);
  });

  it('destroys at once, on close, a client pushed out whose grace has not ended', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const small = new AwsClients({ maxAttempts: 1, callTimeoutMs: 60_000, maxClients: 1 });
    const first = small.route53(account({ id: 'a' }));
    const destroyed = vi.spyOn(first, 'destroy');
    small.route53(account({ id: 'b' }));
    expect(destroyed).not.toHaveBeenCalled();
    small.close();
    expect(destroyed).toHaveBeenCalledOnce();
    vi.advanceTimersByTime(60_000);
    expect(destroyed).toHaveBeenCalledOnce();
  });
});
