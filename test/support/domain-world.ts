import { baseWorld, mergeWorld, ORG_A, ORG_B } from './world.js';

/**
 * Domains and certificates around the standard world: org A has a storefront (`mi-a-web`, with a
 * wildcard `*.apps.acme.example`) and a worker (`mi-a-worker`, with a name under that wildcard);
 * org B has a shop with a name under org A's wildcard and a wildcard of its own.
 */
export function domainWorld(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return mergeWorld(
    baseWorld(),
    {
      cloudAccounts: [
        { id: 'acct-a', organizationId: ORG_A, provider: 'local', region: 'eu-west-1' },
        { id: 'acct-b', organizationId: ORG_B, provider: 'local', region: 'us-east-1' },
      ],
      projects: [
        { id: 'prj-a', organizationId: ORG_A, name: 'Storefront' },
        { id: 'prj-b', organizationId: ORG_B, name: 'Shop' },
      ],
      environments: [
        { id: 'env-a', projectId: 'prj-a', name: 'production' },
        { id: 'env-b', projectId: 'prj-b', name: 'production' },
      ],
      moduleInstances: [
        { id: 'mi-a-web', environmentId: 'env-a', name: 'web' },
        { id: 'mi-a-worker', environmentId: 'env-a', name: 'worker' },
        { id: 'mi-a-empty', environmentId: 'env-a', name: 'empty' },
        { id: 'mi-b-shop', environmentId: 'env-b', name: 'shop' },
      ],
      certificates: [
        {
          id: 'cert-www',
          moduleInstanceId: 'mi-a-web',
          domainName: 'www.acme.example',
          status: 'ISSUED',
          arn: 'arn:aws:acm:eu-west-1:111122223333:certificate/www',
          issuedAt: '2026-01-01T00:00:00Z',
          expiresAt: '2026-04-01T00:00:00Z',
          validationRecords: [{ name: '_v1.www.acme.example.', type: 'CNAME', value: '_t1.acm-validations.aws.' }],
        },
        {
          id: 'cert-apps',
          moduleInstanceId: 'mi-a-web',
          domainName: '*.apps.acme.example',
          status: 'PENDINGVALIDATION',
          validationRecords: [{ name: '_v2.apps.acme.example', type: 'CNAME', value: '_t2.acm-validations.aws' }],
        },
        { id: 'cert-b', moduleInstanceId: 'mi-b-shop', domainName: 'shop.beta.example', status: 'FAILED' },
      ],
      domains: [
        {
          id: 'd-www',
          moduleInstanceId: 'mi-a-web',
          domainName: 'www.acme.example',
          managedByService: false,
          certificateId: 'cert-www',
          targetDnsName: 'lb-1.elb.example',
        },
        {
          id: 'd-apex',
          moduleInstanceId: 'mi-a-web',
          domainName: 'acme.example',
          managedByService: false,
          targetDnsName: 'lb-1.elb.example',
          targetZoneId: 'ZLB1',
        },
        {
          id: 'd-apps',
          moduleInstanceId: 'mi-a-web',
          domainName: '*.apps.acme.example',
          managedByService: true,
          certificateId: 'cert-apps',
          targetDnsName: 'lb-1.elb.example',
        },
        {
          id: 'd-api',
          moduleInstanceId: 'mi-a-web',
          domainName: 'api.apps.acme.example',
          managedByService: true,
          certificateId: 'cert-apps',
          targetDnsName: 'lb-1.elb.example',
        },
        { id: 'd-bare', moduleInstanceId: 'mi-a-web', domainName: 'bare.acme.example', managedByService: false },
        {
          id: 'd-admin',
          moduleInstanceId: 'mi-a-worker',
          domainName: 'admin.apps.acme.example',
          managedByService: false,
          targetDnsName: 'lb-2.elb.example',
        },
        {
          id: 'd-b-shop',
          moduleInstanceId: 'mi-b-shop',
          domainName: 'shop.beta.example',
          managedByService: false,
          certificateId: 'cert-b',
          targetDnsName: 'lb-b.elb.example',
        },
        {
          id: 'd-b-under-a',
          moduleInstanceId: 'mi-b-shop',
          domainName: 'b.apps.acme.example',
          managedByService: false,
          targetDnsName: 'lb-b.elb.example',
        },
        {
          id: 'd-b-wild',
          moduleInstanceId: 'mi-b-shop',
          domainName: '*.beta.example',
          managedByService: false,
          targetDnsName: 'lb-b.elb.example',
        },
      ],
    },
    extra,
  );
}
