import { expectedRecords } from '../../src/core/dns-records.js';
import type { StubRecord } from './dns-stub.js';

/**
 * The `domains` benchmark's world: two organizations of `INSTANCES_PER_ORG` module instances,
 * each with `perInstance` domains (100,000 in all at scale 1). Instance k's names sit under
 * `svc<k>.<org>.bench.example`; even instances also hold the wildcard `*.svc<k>…` (so listed names
 * have a parent, and availability meets WILDCARD conflicts), odd ones do not (SUBDOMAIN conflicts).
 * One domain in ten is managed by the service, one in four has the instance's certificate, one in
 * seven routes through an alias `A` record.
 */
export const INSTANCES_PER_ORG = 50;
export const ORG_A = 'org-a';
export const ORG_B = 'org-b';
export const TOKEN = 'berth_k-bench_domains-bench-secret-01234';

interface FixtureDomain {
  id: string;
  moduleInstanceId: string;
  domainName: string;
  managedByService: boolean;
  certificateId?: string;
  targetDnsName?: string;
  targetZoneId?: string;
}

const zone = (org: string, k: number) => `svc${k}.${org === ORG_A ? 'a' : 'b'}.bench.example`;
const instance = (org: string, k: number) => `mi-${org === ORG_A ? 'a' : 'b'}-${k}`;

function domainsOf(org: string, k: number, perInstance: number): FixtureDomain[] {
  const mi = instance(org, k);
  const cert = `cert-${mi}`;
  const out: FixtureDomain[] = [];
  const wildcard = k % 2 === 0;
  if (wildcard)
    out.push({
      id: `d-${mi}-w`,
      moduleInstanceId: mi,
      domainName: `*.${zone(org, k)}`,
      managedByService: true,
      certificateId: cert,
      targetDnsName: `lb${k}.elb.bench.example`,
    });
  for (let j = 0; out.length < perInstance; j++) {
    const d: FixtureDomain = {
      id: `d-${mi}-${j}`,
      moduleInstanceId: mi,
      domainName: `h${j}.${zone(org, k)}`,
      managedByService: j % 10 === 0,
      targetDnsName: `lb${k}.elb.bench.example`,
    };
    if (j % 4 === 0) d.certificateId = cert;
    if (j % 7 === 0) d.targetZoneId = 'ZBENCH';
    out.push(d);
  }
  return out;
}

export interface DomainsWorld {
  fixture: Record<string, unknown>;
  /** DNS answers for the domains of the measured instances: two in three resolve as expected. */
  stubRecords: StubRecord[];
  /** Instances whose pages the load reads. */
  measuredInstances: string[];
  domainCount: number;
}

export function domainsWorld(perInstance: number, measured: number): DomainsWorld {
  const orgs = [ORG_A, ORG_B];
  const ks = Array.from({ length: INSTANCES_PER_ORG }, (_, k) => k);
  const domains = orgs.flatMap((org) => ks.flatMap((k) => domainsOf(org, k, perInstance)));
  const measuredInstances = ks.slice(0, measured).map((k) => instance(ORG_A, k));
  const stubRecords: StubRecord[] = [];
  const chosen = new Set(measuredInstances);
  for (const d of domains) {
    if (!chosen.has(d.moduleInstanceId) || d.managedByService || Number(d.id.split('-').pop()) % 3 === 0) continue;
    const records = expectedRecords(
      {
        id: d.id,
        domainName: d.domainName,
        managedByService: d.managedByService,
        targetDnsName: d.targetDnsName ?? null,
        targetZoneId: d.targetZoneId ?? null,
      },
      [],
    );
    for (const r of records) {
      if (r.type === 'A') {
        // An alias: the name's addresses are among its target's.
        stubRecords.push({ name: r.name, type: 'A', value: '192.0.2.10' });
        stubRecords.push({ name: r.expected, type: 'A', value: '192.0.2.10' });
      } else if (r.type === 'CNAME' || r.type === 'TXT')
        stubRecords.push({ name: r.name, type: r.type, value: r.expected });
    }
  }
  const fixture = {
    organizations: [
      { id: ORG_A, name: 'Bench A', permittedIdentityProviders: ['EMAIL_PASSWORD'] },
      { id: ORG_B, name: 'Bench B', permittedIdentityProviders: ['EMAIL_PASSWORD'] },
    ],
    principals: [
      {
        id: 'p-bench',
        name: 'Bench owner',
        memberships: [{ organizationId: ORG_A, role: 'owner' }],
        apiKeys: [{ id: 'k-bench', token: TOKEN, organizationId: ORG_A }],
      },
    ],
    projects: orgs.map((org) => ({ id: `prj-${org}`, organizationId: org, name: `Project of ${org}` })),
    environments: orgs.map((org) => ({ id: `env-${org}`, projectId: `prj-${org}`, name: 'production' })),
    moduleInstances: orgs.flatMap((org) =>
      ks.map((k) => ({ id: instance(org, k), environmentId: `env-${org}`, name: `svc${k}` })),
    ),
    certificates: orgs.flatMap((org) =>
      ks.map((k) => ({
        id: `cert-${instance(org, k)}`,
        moduleInstanceId: instance(org, k),
        domainName: `*.${zone(org, k)}`,
        status: 'ISSUED',
        arn: `arn:aws:acm:eu-west-1:111122223333:certificate/${instance(org, k)}`,
        issuedAt: '2026-01-01T00:00:00Z',
        expiresAt: '2026-04-01T00:00:00Z',
        validationRecords: [{ name: `_v.${zone(org, k)}.`, type: 'CNAME', value: `_t${k}.acm-validations.aws.` }],
      })),
    ),
    domains,
  };
  return { fixture, stubRecords, measuredInstances, domainCount: domains.length };
}

/** Name-availability questions of org A's owner, one per kind of answer, and the answer each must get. */
export const AVAILABILITY: { query: string; expect: string }[] = [
  { query: 'name=new-site.fresh.example', expect: 'available' },
  { query: 'name=h5.svc3.a.bench.example', expect: 'EXACT SAME_ORGANIZATION' },
  { query: 'name=h5.svc3.a.bench.example&moduleInstanceId=mi-a-3', expect: 'EXACT SAME_MODULE_INSTANCE' },
  { query: 'name=H7.SVC4.A.Bench.Example.', expect: 'EXACT SAME_ORGANIZATION' },
  { query: 'name=shop.svc2.b.bench.example', expect: 'WILDCARD OTHER_ORGANIZATION' },
  { query: 'name=*.svc3.b.bench.example', expect: 'SUBDOMAIN OTHER_ORGANIZATION' },
];
