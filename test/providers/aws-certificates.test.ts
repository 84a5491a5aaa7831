import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AwsAccount, AwsClients } from '../../src/providers/aws/clients.js';
import { AcmCertificateAuthority, mapAcmStatus } from '../../src/providers/aws/domains/certificate-authority.js';
import type { StoredCertificate } from '../../src/providers/domains/certificate-authority.js';
import { FAKE_CREDENTIALS, startFakeAws, type AcmCertificateStatus, type FakeAws } from '../support/fake-aws/index.js';
import { startFakeAwsClients, stopFakeAwsClients } from '../support/fake-aws-clients.js';
import { providerFailure } from '../support/provider-failure.js';

let aws: FakeAws;
let clients: AwsClients;

const account = (extra: Partial<AwsAccount> = {}): AwsAccount => ({
  id: 'acct-aws',
  region: 'eu-west-1',
  roleArn: null,
  externalId: null,
  endpoint: aws.endpoint,
  ...extra,
});

function authority(acct = account(), region = 'eu-west-1'): AcmCertificateAuthority {
  return new AcmCertificateAuthority(clients.acm(acct, region), 5_000);
}

const stored = (arn: string | null, extra: Partial<StoredCertificate> = {}): StoredCertificate => ({
  id: 'cert-1',
  arn,
  domainName: 'app.example.com',
  status: 'PENDINGVALIDATION',
  issuedAt: null,
  expiresAt: null,
  validationRecords: [],
  ...extra,
});

beforeEach(async () => {
  ({ aws, clients } = await startFakeAwsClients());
});

afterEach(async () => {
  await stopFakeAwsClients(aws, clients);
});

describe('ACM certificate authority', () => {
  it.each<[AcmCertificateStatus, string]>([
    ['PENDING_VALIDATION', 'PENDINGVALIDATION'],
    ['ISSUED', 'ISSUED'],
    ['INACTIVE', 'INACTIVE'],
    ['EXPIRED', 'EXPIRED'],
    ['VALIDATION_TIMED_OUT', 'VALIDATIONTIMEDOUT'],
    ['REVOKED', 'REVOKED'],
    ['FAILED', 'FAILED'],
  ])('maps ACM status %s to %s', async (acmStatus, status) => {
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com', status: acmStatus }, 'eu-west-1');
    const state = await authority().describe(stored(cert.arn));
    expect(state.status).toBe(status);
    expect(mapAcmStatus(acmStatus)).toBe(status);
  });

  it('reads the validation records of DomainValidationOptions once each, without trailing dots', async () => {
    const cert = aws.acm.addCertificate(
      {
        domainName: '*.app.example.com',
        subjectAlternativeNames: ['*.app.example.com', 'app.example.com'],
        validationRecords: [
          { domainName: '*.app.example.com', name: '_abc.app.example.com.', value: '_def.xyz.acm-validations.aws.' },
          { domainName: 'app.example.com', name: '_abc.app.example.com.', value: '_def.xyz.acm-validations.aws.' },
        ],
      },
      'eu-west-1',
    );
    const state = await authority().describe(stored(cert.arn));
    expect(state).toEqual({
      status: 'PENDINGVALIDATION',
      issuedAt: null,
      expiresAt: null,
      validationRecords: [{ name: '_abc.app.example.com', type: 'CNAME', value: '_def.xyz.acm-validations.aws' }],
    });
    const call = aws.callsTo('DescribeCertificate')[0]!;
    expect(call).toMatchObject({
      region: 'eu-west-1',
      input: { CertificateArn: cert.arn },
      accessKeyId: FAKE_CREDENTIALS.accessKeyId,
    });
  });

  it('keeps the known records while ACM has not made them yet, and takes issue and expiry dates from ACM', async () => {
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com', recordHiddenForDescribes: 1 }, 'eu-west-1');
    const known = [{ name: '_old.app.example.com', type: 'CNAME', value: '_old.acm-validations.aws' }];
    expect((await authority().describe(stored(cert.arn, { validationRecords: known }))).validationRecords).toEqual(
      known,
    );

    aws.acm.setStatus(cert.arn, 'ISSUED', '2026-02-01T00:00:00Z');
    const issued = await authority().describe(stored(cert.arn));
    expect(issued.status).toBe('ISSUED');
    expect(issued.issuedAt?.toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(issued.expiresAt?.toISOString()).toBe(
      new Date(Date.parse('2026-02-01T00:00:00Z') + 395 * 86_400_000).toISOString(),
    );
  });

  it('retries throttling with backoff and then answers', async () => {
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com', status: 'ISSUED' }, 'eu-west-1');
    aws.failNext('DescribeCertificate', { code: 'ThrottlingException', times: 2 });
    expect((await authority().describe(stored(cert.arn))).status).toBe('ISSUED');
    expect(aws.callsTo('DescribeCertificate').map((c) => c.errorCode ?? 'ok')).toEqual([
      'ThrottlingException',
      'ThrottlingException',
      'ok',
    ]);
  });

  it('gives up on throttling after the configured attempts with a ProviderError naming the AWS code', async () => {
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com' }, 'eu-west-1');
    aws.failNext('DescribeCertificate', { code: 'ThrottlingException', times: 5 });
    const error = await providerFailure(authority().describe(stored(cert.arn)));
    expect(error).toMatchObject({
      service: 'certificate-authority',
      provider: 'aws',
      details: { operation: 'DescribeCertificate', awsCode: 'ThrottlingException', httpStatus: 400 },
    });
    expect(error.message).toBe('AWS DescribeCertificate failed after 3 attempts: ThrottlingException: Rate exceeded');
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(3);
  });

  it('turns a missing certificate, a bad ARN, a server error and an unreachable endpoint into ProviderErrors', async () => {
    const missing = await providerFailure(
      authority().describe(stored('arn:aws:acm:eu-west-1:123456789012:certificate/nope')),
    );
    expect(missing.details.awsCode).toBe('ResourceNotFoundException');
    expect(aws.callsTo('DescribeCertificate')).toHaveLength(1);

    aws.failNext('DescribeCertificate', { code: 'InternalFailure', times: 3 });
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com' }, 'eu-west-1');
    expect((await providerFailure(authority().describe(stored(cert.arn)))).details).toMatchObject({
      awsCode: 'InternalFailure',
      httpStatus: 500,
    });

    expect((await providerFailure(authority().describe(stored(null)))).message).toMatch(/no ACM ARN/);

    const gone = await startFakeAws();
    await gone.close();
    const unreachable = await providerFailure(
      authority(account({ id: 'gone', endpoint: gone.endpoint })).describe(stored(cert.arn)),
    );
    expect(unreachable.message).toMatch(/^AWS DescribeCertificate could not be reached/);
  });

  it("signs with credentials from STS AssumeRole, with the account's external id, reused across calls", async () => {
    const roleArn = 'arn:aws:iam::210987654321:role/berth-access';
    aws.sts.requireExternalId(roleArn, 'ext-123');
    const cert = aws.acm.addCertificate({ domainName: 'app.example.com', status: 'ISSUED' }, 'eu-west-1');
    const ca = authority(account({ id: 'acct-role', roleArn, externalId: 'ext-123' }));
    await ca.describe(stored(cert.arn));
    await ca.describe(stored(cert.arn));
    expect(aws.callsTo('AssumeRole')).toHaveLength(1);
    expect(aws.callsTo('AssumeRole')[0]!.input).toMatchObject({
      RoleArn: roleArn,
      ExternalId: 'ext-123',
      RoleSessionName: 'berth-acct-role',
    });
    const issued = aws.sts.issued[0]!;
    expect(aws.callsTo('DescribeCertificate').map((c) => c.accessKeyId)).toEqual([
      issued.accessKeyId,
      issued.accessKeyId,
    ]);

    const denied = await providerFailure(
      authority(account({ id: 'acct-wrong', roleArn, externalId: 'wrong' })).describe(stored(cert.arn)),
    );
    expect(denied.message).toMatch(/AccessDenied/);
  });
});
