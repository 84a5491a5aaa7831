// The world of faults-aws.test.ts: one organization with a local account and two `aws` accounts, each
// pointed at its own fake endpoint (one stays healthy, the other gets the faults), a module instance
// with a log source in each, and a pending ACM certificate served by the faulty account.
import { expect } from 'vitest';
import type { FakeAws } from '../../support/fake-aws/index.js';
import { baseWorld, mergeWorld, ORG_A } from '../../support/world.js';

export const REGION = 'us-east-1';
export const GROUPS = { local: '/app/local', healthy: '/app/healthy', faulty: '/app/faulty' } as const;
export const CERT_ARN = `arn:aws:acm:${REGION}:123456789012:certificate/c-faulty`;
export const CERT_ID = 'cert-acm';
export const CERT_DOMAIN = 'c1.acme.example';
/** Events per source. */
export const PER_SOURCE = 3;

const source = (id: string, account: string, logGroup: string) => ({
  id,
  kind: 'ui.logs',
  cloudAccountId: account,
  region: REGION,
  logGroup,
});

export function awsFaultWorld(healthy: FakeAws, faulty: FakeAws, base: number): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'acc-local', organizationId: ORG_A, provider: 'local', region: REGION },
      // ids sort acc-faulty first: the certificate's account (same region, no role) is the first by id.
      { id: 'acc-faulty', organizationId: ORG_A, provider: 'aws', region: REGION, endpoint: faulty.endpoint },
      { id: 'acc-healthy', organizationId: ORG_A, provider: 'aws', region: REGION, endpoint: healthy.endpoint },
    ],
    projects: [{ id: 'prj', organizationId: ORG_A, name: 'Faults' }],
    environments: [{ id: 'env', projectId: 'prj', name: 'production' }],
    moduleInstances: [
      {
        id: 'mi-logs',
        environmentId: 'env',
        name: 'logs',
        logSources: [
          source('ls-local', 'acc-local', GROUPS.local),
          source('ls-healthy', 'acc-healthy', GROUPS.healthy),
          source('ls-faulty', 'acc-faulty', GROUPS.faulty),
        ],
      },
    ],
    logEvents: Array.from({ length: PER_SOURCE }, (_, i) => ({
      cloudAccountId: 'acc-local',
      region: REGION,
      logGroup: GROUPS.local,
      logStream: 'web/1',
      timestamp: base + i,
      message: `INFO local ${i}`,
    })),
    certificates: [
      { id: CERT_ID, moduleInstanceId: 'mi-logs', domainName: CERT_DOMAIN, status: 'PENDINGVALIDATION', arn: CERT_ARN },
    ],
    // Managed by the service: a retry publishes ACM's records in the account's Route 53 zone.
    domains: [
      {
        id: 'd-c1',
        moduleInstanceId: 'mi-logs',
        domainName: CERT_DOMAIN,
        managedByService: true,
        certificateId: CERT_ID,
        targetDnsName: 'lb.elb.example',
      },
    ],
  });
}

/** Puts the events of the two aws sources in their fakes, and the certificate and zone in the faulty one. */
export function fillFakes(healthy: FakeAws, faulty: FakeAws, base: number): void {
  const events = (name: string) =>
    Array.from({ length: PER_SOURCE }, (_, i) => ({ timestamp: base + 10 + i, message: `INFO ${name} ${i}` }));
  healthy.logs.putLogEvents(GROUPS.healthy, 'web/1', events('healthy'));
  faulty.logs.putLogEvents(GROUPS.faulty, 'web/1', events('faulty'));
  faulty.acm.addCertificate({ arn: CERT_ARN, domainName: CERT_DOMAIN }, REGION);
  faulty.route53.createHostedZone('acme.example');
}

const ERROR_KEYS = new Set([
  'code',
  'message',
  'description',
  'action',
  'details',
  'isInternal',
  'metadata',
  'requestId',
]);

/** `data` of an `event: error` message is the spec's error object, with the stream's request id. */
export function expectErrorObject(data: unknown, code: string, requestId: string | null): void {
  const body = data as Record<string, unknown>;
  expect(Object.keys(body).filter((k) => !ERROR_KEYS.has(k))).toEqual([]);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  expect(body.requestId).toBe(requestId);
}
