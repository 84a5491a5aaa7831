// The world of the limits-across-organizations test (issue 20, attack 5): one principal, owner at Acme and viewer at
// Globex, with a key scoped to Acme; a Globex admin who mints a Globex-scoped key for it through the API. Each
// organization has a local cloud account with a small log group.
import { noisyMessage, REGION } from './noisy-world.js';

export { REGION };

export interface LimitsOrg {
  organizationId: string;
  accountId: string;
  environmentId: string;
  moduleInstanceId: string;
  logGroup: string;
}

export interface LimitsWorld {
  fixture: Record<string, unknown>;
  acme: LimitsOrg;
  globex: LimitsOrg;
  /** The principal of both organizations, and its Acme-scoped key. */
  dual: { principalId: string; acmeToken: string };
  /** A Globex admin's Globex-scoped key (it mints the dual principal's Globex key). */
  globexAdminToken: string;
  window: { startMs: number; endMs: number };
}

const org = (name: string): LimitsOrg => ({
  organizationId: `lim-${name}`,
  accountId: `acct-lim-${name}`,
  environmentId: `env-lim-${name}`,
  moduleInstanceId: `mi-lim-${name}`,
  logGroup: `/lim/${name}/app`,
});

export function limitsWorld(eventsPerOrg: number, now: number): LimitsWorld {
  const acme = org('acme');
  const globex = org('globex');
  const dual = { principalId: 'p-lim-dual', acmeToken: 'berth_k-lim-dual-acme_lim-dual-acme-secret-0000000000' };
  const globexAdminToken = 'berth_k-lim-globex-admin_lim-globex-admin-secret-0000000000';
  const window = { startMs: now - 3_600_000, endMs: now - 1_000 };
  const span = window.endMs - window.startMs;
  const fixture = {
    organizations: [
      { id: acme.organizationId, name: 'Acme', permittedIdentityProviders: ['EMAIL_PASSWORD'] },
      { id: globex.organizationId, name: 'Globex', permittedIdentityProviders: ['SSO_BROKER'] },
    ],
    principals: [
      {
        id: dual.principalId,
        name: 'Acme owner, Globex viewer',
        memberships: [
          { organizationId: acme.organizationId, role: 'owner' },
          { organizationId: globex.organizationId, role: 'viewer' },
        ],
        apiKeys: [{ id: 'k-lim-dual-acme', token: dual.acmeToken, organizationId: acme.organizationId }],
      },
      {
        id: 'p-lim-globex-admin',
        name: 'Globex admin',
        memberships: [{ organizationId: globex.organizationId, role: 'admin' }],
        apiKeys: [{ id: 'k-lim-globex-admin', token: globexAdminToken, organizationId: globex.organizationId }],
      },
    ],
    cloudAccounts: [acme, globex].map((o) => ({
      id: o.accountId,
      organizationId: o.organizationId,
      provider: 'local',
      region: REGION,
    })),
    projects: [acme, globex].map((o) => ({
      id: `prj-${o.organizationId}`,
      organizationId: o.organizationId,
      name: 'P',
    })),
    environments: [acme, globex].map((o) => ({ id: o.environmentId, projectId: `prj-${o.organizationId}`, name: 'e' })),
    moduleInstances: [acme, globex].map((o) => ({
      id: o.moduleInstanceId,
      environmentId: o.environmentId,
      name: 'web',
      logSources: [{ id: 'app', kind: 'ui.logs', cloudAccountId: o.accountId, region: REGION, logGroup: o.logGroup }],
    })),
    logEvents: [acme, globex].flatMap((o) =>
      Array.from({ length: eventsPerOrg }, (_, i) => ({
        cloudAccountId: o.accountId,
        region: REGION,
        logGroup: o.logGroup,
        logStream: `app/web-${i % 10}`,
        timestamp: window.startMs + Math.floor((i * span) / eventsPerOrg),
        message: noisyMessage(i),
      })),
    ),
  };
  return { fixture, acme, globex, dual, globexAdminToken, window };
}
