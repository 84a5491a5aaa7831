import { loadFixture } from '../../../src/fixtures/load.js';
import type { Store } from '../../../src/store/db.js';

/** One organization `org-<name>` with an account, project, environment and module instance `mi-<name>`. */
export function orgWorld(org: string, logSourceIds: readonly string[] = ['app']): Record<string, unknown[]> {
  return {
    organizations: [{ id: `org-${org}`, name: org, permittedIdentityProviders: [] }],
    cloudAccounts: [{ id: `acct-${org}`, organizationId: `org-${org}`, provider: 'local', region: 'eu-west-1' }],
    projects: [{ id: `prj-${org}`, organizationId: `org-${org}`, name: 'P' }],
    environments: [{ id: `env-${org}`, projectId: `prj-${org}`, name: 'prod' }],
    moduleInstances: [
      {
        id: `mi-${org}`,
        environmentId: `env-${org}`,
        name: 'web',
        logSources: logSourceIds.map((id) => ({
          id,
          kind: 'ui.logs',
          cloudAccountId: `acct-${org}`,
          region: 'eu-west-1',
          logGroup: `/${id}`,
        })),
      },
    ],
  };
}

/** Loads organizations `a` and `b` (`orgWorld`) into the store. */
export async function loadTwoOrgs(store: Store, logSourceIds?: readonly string[]): Promise<void> {
  const a = orgWorld('a', logSourceIds);
  const b = orgWorld('b', logSourceIds);
  await loadFixture(store.db, Object.fromEntries(Object.keys(a).map((k) => [k, [...a[k]!, ...b[k]!]])));
}
