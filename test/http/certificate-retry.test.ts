import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import type { CertificateAuthority } from '../../src/providers/domains/certificate-authority.js';
import type { DnsZone } from '../../src/providers/domains/dns-zone.js';
import { ProviderError } from '../../src/providers/errors.js';
import { createServices, type ServiceOverrides, type Services } from '../../src/services/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { domainWorld } from '../support/domain-world.js';
import { TOKENS } from '../support/world.js';

const DAY_MS = 86_400_000;

/** What the wrapped providers do in the current test. */
const hooks = {
  describeCalls: 0,
  describeDelayMs: 0,
  failDescribe: false,
  failUpsert: false,
};

/** Test doubles around the real providers: they count attempts and fail on demand. */
const overrides: ServiceOverrides = {
  providers: {
    wrapCertificateAuthority: (authority: CertificateAuthority): CertificateAuthority => ({
      provider: authority.provider,
      describe: async (certificate) => {
        hooks.describeCalls += 1;
        if (hooks.describeDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, hooks.describeDelayMs));
        if (hooks.failDescribe) {
          throw new ProviderError('certificate-authority', authority.provider, 'The authority is down.', {
            operation: 'describe',
          });
        }
        return authority.describe(certificate);
      },
      reevaluate: (certificate, current, checks) => authority.reevaluate(certificate, current, checks),
    }),
    wrapDnsZone: (zone: DnsZone): DnsZone => ({
      provider: zone.provider,
      upsert: async (records) => {
        if (hooks.failUpsert)
          throw new ProviderError('dns-zone', zone.provider, 'The zone is read-only today.', { operation: 'upsert' });
        return zone.upsert(records);
      },
      checkAll: (records) => zone.checkAll(records),
    }),
  },
};

const pending = (id: string, name: string, records: { name: string; type: string; value: string }[]) => ({
  id,
  moduleInstanceId: 'mi-a-web',
  domainName: name,
  status: 'PENDINGVALIDATION',
  validationRecords: records,
});

const cname = (n: number) => ({
  name: `_v${n}.c${n}.acme.example`,
  type: 'CNAME',
  value: `_t${n}.acm-validations.aws`,
});

let t: TestApp;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  t = await startTestApp({
    fixture: domainWorld({
      certificates: [1, 2, 3, 4, 5, 6, 7].map((n) => pending(`cert-p${n}`, `c${n}.acme.example`, [cname(n)])),
      domains: [1, 2, 3, 4, 5, 6, 7].map((n) => ({
        id: `d-c${n}`,
        moduleInstanceId: 'mi-a-web',
        domainName: `c${n}.acme.example`,
        managedByService: false,
        certificateId: `cert-p${n}`,
        targetDnsName: 'lb-1.elb.example',
      })),
    }),
    config: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: 400 },
    services: (store, config) => createServices(store, config, overrides),
  });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});
beforeEach(() => {
  Object.assign(hooks, { describeCalls: 0, describeDelayMs: 0, failDescribe: false, failUpsert: false });
  dns.setBlackhole(false);
  dns.setRecords([]);
});

const retry = (id: string, token: string = TOKENS.admin) =>
  t.request('POST', `/managed-certificates/${id}/retry-validation`, { token });

async function stored(id: string) {
  return t.store.db.selectFrom('certificates').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function certificateInList(domainName: string) {
  const res = await t.request('GET', '/domains?moduleInstanceId=mi-a-web&limit=100', { token: TOKENS.owner });
  return res.body.data.find((d: { domainName: string }) => d.domainName === domainName).certificate;
}

describe('POST /managed-certificates/{id}/retry-validation', () => {
  it('stays PENDINGVALIDATION while the records are missing, and is ISSUED on the next retry once they resolve', async () => {
    const first = await retry('cert-p1');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ data: { certificateId: 'cert-p1', status: 'PENDINGVALIDATION' } });

    dns.setRecords([{ name: '_v1.c1.acme.example', type: 'CNAME', value: '_t1.acm-validations.aws' }]);
    const before = Date.now();
    const second = await retry('cert-p1');
    expect(second.body).toEqual({ data: { certificateId: 'cert-p1', status: 'ISSUED' } });

    const certificate = await certificateInList('c1.acme.example');
    expect(certificate.status).toBe('ISSUED');
    const issuedAt = Date.parse(certificate.issuedAt);
    expect(issuedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(issuedAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(Date.parse(certificate.expiresAt) - issuedAt).toBe(90 * DAY_MS);
    expect((await stored('cert-p1')).validation_attempts).toBe(2);

    expectError(await retry('cert-p1'), 409, 'certificates:certificate:not-pending-validation');
  });

  it('does not issue on a wrong value, nor reuse an answer cached before the records were fixed', async () => {
    dns.setRecords([{ name: '_v2.c2.acme.example', type: 'CNAME', value: 'wrong.example' }]);
    expect((await retry('cert-p2')).body.data.status).toBe('PENDINGVALIDATION');
    dns.setRecords([{ name: '_v2.c2.acme.example', type: 'CNAME', value: '_t2.acm-validations.aws' }]);
    expect((await retry('cert-p2')).body.data.status).toBe('ISSUED');
  });

  it('stays pending, without an error, when DNS times out', async () => {
    dns.setRecords([{ name: '_v3.c3.acme.example', type: 'CNAME', value: '_t3.acm-validations.aws' }]);
    dns.setBlackhole(true);
    const res = await retry('cert-p3');
    expect(res.body).toEqual({ data: { certificateId: 'cert-p3', status: 'PENDINGVALIDATION' } });
  });

  it('publishes the validation records of a managed domain in the local zone, then issues', async () => {
    dns.setBlackhole(true);
    const queries = dns.queries();
    const res = await retry('cert-apps');
    expect(res.body).toEqual({ data: { certificateId: 'cert-apps', status: 'ISSUED' } });
    const zone = await t.store.db.selectFrom('dns_records').select(['name', 'type', 'value']).execute();
    expect(zone).toContainEqual({ name: '_v2.apps.acme.example', type: 'CNAME', value: '_t2.acm-validations.aws' });
    // The local zone is the authority for managed domains: public DNS was never asked.
    expect(dns.queries()).toBe(queries);
  });

  it('coalesces ten concurrent retries into one attempt, and all ten answer its outcome', async () => {
    dns.setRecords([cname(4)].map((r) => ({ name: r.name, type: 'CNAME' as const, value: r.value })));
    hooks.describeDelayMs = 300;
    const results = await Promise.all(Array.from({ length: 10 }, () => retry('cert-p4')));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(results.map((r) => r.body.data)).toEqual(Array(10).fill({ certificateId: 'cert-p4', status: 'ISSUED' }));
    expect(hooks.describeCalls).toBe(1);
    expect((await stored('cert-p4')).validation_attempts).toBe(1);
  });

  it('coalesces concurrent retries on two replicas of one database into one attempt', async () => {
    const second = await startReplica();
    try {
      hooks.describeDelayMs = 400;
      const requests = Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? retry('cert-p5')
          : fetch(`${second.url}/managed-certificates/cert-p5/retry-validation`, {
              method: 'POST',
              headers: { authorization: `Bearer ${TOKENS.owner}` },
            }).then(async (res) => ({ status: res.status, body: await res.json() })),
      );
      const results = await Promise.all(requests);
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(new Set(results.map((r) => r.body.data.status))).toEqual(new Set(['PENDINGVALIDATION']));
      expect(hooks.describeCalls).toBe(1);
      expect((await stored('cert-p5')).validation_attempts).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('takes over a lease its holder left behind when it expired', async () => {
    await t.store.db
      .updateTable('certificates')
      .set({ validation_attempt_id: 'crashed-replica', validation_attempt_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', 'cert-p6')
      .execute();
    const res = await retry('cert-p6');
    expect(res.body.data.status).toBe('PENDINGVALIDATION');
    const row = await stored('cert-p6');
    expect(row.validation_attempts).toBe(1);
    expect(row.validation_attempt_id).toBeNull();
  });

  it('answers 502 certificates:authority:failed when the authority fails, and changes nothing', async () => {
    dns.setRecords([cname(7)].map((r) => ({ name: r.name, type: 'CNAME' as const, value: r.value })));
    const before = await stored('cert-p7');
    hooks.failDescribe = true;
    const res = await retry('cert-p7', TOKENS.owner);
    expectError(res, 502, 'certificates:authority:failed');
    // The provider's own message may name internal endpoints: only superadmins read it.
    expect(res.body.description).toBe('The local certificate authority failed during describe.');
    expect(res.body.metadata).toBeUndefined();
    const after = await stored('cert-p7');
    expect(after).toEqual(before);

    const asRoot = await retry('cert-p7', TOKENS.superadmin);
    expectError(asRoot, 502, 'certificates:authority:failed');
    expect(asRoot.body).toMatchObject({
      description: 'The authority is down.',
      isInternal: true,
      metadata: { provider: 'local', operation: 'describe' },
    });

    hooks.failDescribe = false;
    expect((await retry('cert-p7')).body.data.status).toBe('ISSUED');
  });

  it('answers 502 certificates:dns-zone:failed when the zone cannot be written, and changes nothing', async () => {
    await t.store.db
      .updateTable('certificates')
      .set({ status: 'PENDINGVALIDATION', issued_at: null, expires_at: null })
      .where('id', '=', 'cert-apps')
      .execute();
    await t.store.db.deleteFrom('dns_records').execute();
    const before = await stored('cert-apps');
    hooks.failUpsert = true;
    expectError(await retry('cert-apps'), 502, 'certificates:dns-zone:failed');
    expect(await stored('cert-apps')).toEqual(before);
    expect(await t.store.db.selectFrom('dns_records').selectAll().execute()).toEqual([]);
  });
});

describe('POST /managed-certificates/{id}/retry-validation: who may, and which certificates', () => {
  it('refuses viewers and members of the organization with 403', async () => {
    expectError(await retry('cert-p3', TOKENS.viewer), 403, 'auth:permission:denied');
    expectError(await retry('cert-p3', TOKENS.member), 403, 'auth:permission:denied');
  });

  it("answers another organization's certificate exactly like an unknown one", async () => {
    const other = await retry('cert-b', TOKENS.owner);
    const unknown = await retry('cert-nope', TOKENS.owner);
    expectError(other, 404, 'certificates:certificate:not-found');
    expectError(unknown, 404, 'certificates:certificate:not-found');
    expect({ ...other.body, requestId: undefined }).toEqual({ ...unknown.body, requestId: undefined });
    expectError(await retry('cert-p3', TOKENS.otherAdmin), 404, 'certificates:certificate:not-found');
  });

  it('answers 409 for a certificate that is not pending validation', async () => {
    const res = await retry('cert-www');
    expectError(res, 409, 'certificates:certificate:not-pending-validation');
    expect(res.body.metadata).toEqual({ status: 'ISSUED' });
    expectError(await retry('cert-b', TOKENS.otherAdmin), 409, 'certificates:certificate:not-pending-validation');
  });

  it('answers 401 without a token and 400 for a malformed id', async () => {
    expectError(await t.request('POST', '/managed-certificates/cert-p3/retry-validation'), 401, 'auth:token:missing');
    expectError(await retry('x'.repeat(200)), 400, 'validation:request:invalid-params');
  });
});

/** A second Berth process on the same database: its own services, so its own in-process coalescing. */
async function startReplica(): Promise<{ url: string; close(): Promise<void> }> {
  const services: Services = createServices(t.store, t.config, overrides);
  const app: FastifyInstance = await buildApp({ config: t.config, services });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    close: async () => {
      await services.close();
      await app.close();
    },
  };
}
