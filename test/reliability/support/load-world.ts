import type { TestDnsRecord } from '../../support/dns-server.js';

/**
 * The load test's world: many organizations, each with a few principals (one API key each), a
 * `local` cloud account, a project and environment with two module instances (one log source
 * each), seeded log events, domains and certificates. Deterministic from its size, so the load
 * driver (another process) rebuilds the same tenants the test seeded.
 */
export interface LoadTenant {
  organizationId: string;
  /** Keys by role; admin may write (categories, ingest, certificate retry). */
  tokens: { admin: string; member: string; viewer: string };
  accountId: string;
  region: string;
  environmentId: string;
  moduleInstanceIds: string[];
  /** The log groups of the tenant's log sources (ingest writes into them, the stream reads them). */
  logGroups: string[];
  /** Certificates in PENDINGVALIDATION whose records never resolve, so a retry answers 200 and stays pending. */
  pendingCertificateIds: string[];
  /** Names the tenant holds (name availability answers an EXACT conflict of its own). */
  domainNames: string[];
}

export interface LoadWorld {
  fixture: Record<string, unknown>;
  tenants: LoadTenant[];
  /** DNS answers for half of the domains' routing records (the domain list looks them up). */
  dnsRecords: TestDnsRecord[];
  eventCount: number;
}

const REGION = 'eu-west-1';
const STREAMS = ['app/i-01', 'app/i-02', 'worker/j-7'];

const pad = (n: number) => String(n).padStart(3, '0');

function message(i: number, org: number): string {
  switch (i % 5) {
    case 0:
      return JSON.stringify({ level: 'info', msg: 'order placed', orderId: `o-${org}-${i}`, amount: (i * 37) % 500 });
    case 1:
      return `WARN slow query on orders took ${100 + (i % 900)} ms`;
    case 2:
      return JSON.stringify({ level: 'error', msg: 'payment failed', orderId: `o-${org}-${i}`, code: 'card_declined' });
    case 3:
      return `INFO GET /api/orders/${i} 200 ${i % 40} ms`;
    default:
      return `DEBUG cache hit ratio ${(i % 100) / 100}`;
  }
}

export function loadWorld(organizations: number, eventsPerGroup: number, now: number): LoadWorld {
  const fixture = {
    organizations: [] as unknown[],
    principals: [] as unknown[],
    cloudAccounts: [] as unknown[],
    projects: [] as unknown[],
    environments: [] as unknown[],
    moduleInstances: [] as unknown[],
    certificates: [] as unknown[],
    domains: [] as unknown[],
    logEvents: [] as unknown[],
  };
  const tenants: LoadTenant[] = [];
  const dnsRecords: TestDnsRecord[] = [];
  for (let o = 0; o < organizations; o++) {
    const n = pad(o);
    const org = `lt-org-${n}`;
    fixture.organizations.push({
      id: org,
      name: `Load tenant ${n}`,
      permittedIdentityProviders: o % 3 === 0 ? ['EMAIL_PASSWORD'] : ['SSO_BROKER', 'CODE_HOST_1', 'SOCIAL_1'],
    });
    const tokens = { admin: '', member: '', viewer: '' };
    for (const role of ['admin', 'member', 'viewer'] as const) {
      const keyId = `k-lt-${n}-${role}`;
      tokens[role] = `berth_${keyId}_load-${role}-secret-${n}-0000000000`;
      fixture.principals.push({
        id: `p-lt-${n}-${role}`,
        name: `Load ${role} ${n}`,
        memberships: [{ organizationId: org, role }],
        apiKeys: [{ id: keyId, token: tokens[role], organizationId: org }],
      });
    }
    const accountId = `acct-lt-${n}`;
    fixture.cloudAccounts.push({ id: accountId, organizationId: org, provider: 'local', region: REGION });
    fixture.projects.push({ id: `prj-lt-${n}`, organizationId: org, name: `Shop ${n}` });
    const environmentId = `env-lt-${n}`;
    fixture.environments.push({ id: environmentId, projectId: `prj-lt-${n}`, name: 'production' });
    const moduleInstanceIds: string[] = [];
    const logGroups: string[] = [];
    for (const name of ['web', 'jobs']) {
      const mi = `mi-lt-${n}-${name}`;
      const group = `/lt/${n}/${name}`;
      moduleInstanceIds.push(mi);
      logGroups.push(group);
      fixture.moduleInstances.push({
        id: mi,
        environmentId,
        name,
        logSources: [{ id: `ls-${name}`, kind: 'ui.logs', cloudAccountId: accountId, region: REGION, logGroup: group }],
      });
      for (let i = 0; i < eventsPerGroup; i++) {
        fixture.logEvents.push({
          cloudAccountId: accountId,
          region: REGION,
          logGroup: group,
          logStream: STREAMS[i % STREAMS.length],
          timestamp: now - 3_600_000 + Math.floor((i * 3_500_000) / eventsPerGroup),
          message: message(i, o),
        });
      }
    }
    const web = moduleInstanceIds[0]!;
    const zone = `tenant${n}.example`;
    const pendingCertificateIds: string[] = [];
    for (let c = 0; c < 2; c++) {
      const id = `cert-lt-${n}-${c}`;
      pendingCertificateIds.push(id);
      fixture.certificates.push({
        id,
        moduleInstanceId: web,
        domainName: `c${c}.${zone}`,
        status: 'PENDINGVALIDATION',
        validationRecords: [{ name: `_v${c}.c${c}.${zone}`, type: 'CNAME', value: `_t${c}.acm-validations.aws` }],
      });
    }
    fixture.certificates.push({
      id: `cert-lt-${n}-www`,
      moduleInstanceId: web,
      domainName: `www.${zone}`,
      status: 'ISSUED',
      arn: `arn:aws:acm:${REGION}:111122223333:certificate/lt-${n}`,
      issuedAt: '2026-01-01T00:00:00Z',
      expiresAt: '2026-04-01T00:00:00Z',
      validationRecords: [{ name: `_w.www.${zone}`, type: 'CNAME', value: '_tw.acm-validations.aws' }],
    });
    const domains = [
      {
        id: `d-lt-${n}-www`,
        domainName: `www.${zone}`,
        certificateId: `cert-lt-${n}-www`,
        targetDnsName: `lb-${n}.elb.example`,
      },
      { id: `d-lt-${n}-apex`, domainName: zone, targetDnsName: `lb-${n}.elb.example`, targetZoneId: 'ZLB1' },
      {
        id: `d-lt-${n}-c0`,
        domainName: `c0.${zone}`,
        certificateId: `cert-lt-${n}-0`,
        targetDnsName: `lb-${n}.elb.example`,
      },
      { id: `d-lt-${n}-c1`, domainName: `c1.${zone}`, certificateId: `cert-lt-${n}-1` },
      { id: `d-lt-${n}-wild`, domainName: `*.apps.${zone}`, targetDnsName: `lb-${n}.elb.example` },
      { id: `d-lt-${n}-api`, domainName: `api.apps.${zone}`, targetDnsName: `lb-${n}.elb.example` },
    ];
    for (const d of domains) fixture.domains.push({ ...d, moduleInstanceId: web, managedByService: false });
    if (o % 2 === 0) {
      dnsRecords.push({ name: `www.${zone}`, type: 'CNAME', value: `lb-${n}.elb.example` });
      dnsRecords.push({ name: `api.apps.${zone}`, type: 'CNAME', value: `lb-${n}.elb.example` });
    }
    tenants.push({
      organizationId: org,
      tokens,
      accountId,
      region: REGION,
      environmentId,
      moduleInstanceIds,
      logGroups,
      pendingCertificateIds,
      domainNames: domains.map((d) => d.domainName),
    });
  }
  return { fixture, tenants, dnsRecords, eventCount: fixture.logEvents.length };
}
