import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/db.js';
import { crossLinks, storeTenancy, type Tenancy } from '../../src/store/tenancy.js';
import { openSeededStore } from '../support/seeded-store.js';

let closeStore: (() => Promise<void>) | undefined;
let store: Store;
let tenancy: Tenancy;

/** Two organizations, each with one object of every kind. */
function orgWorld(org: 'a' | 'b'): Record<string, unknown[]> {
  return {
    organizations: [{ id: `org-${org}`, name: `Org ${org}`, permittedIdentityProviders: [] }],
    cloudAccounts: [{ id: `acct-${org}`, organizationId: `org-${org}`, provider: 'local', region: 'eu-west-1' }],
    projects: [{ id: `prj-${org}`, organizationId: `org-${org}`, name: 'P' }],
    environments: [{ id: `env-${org}`, projectId: `prj-${org}`, name: 'prod' }],
    moduleInstances: [
      {
        id: `mi-${org}`,
        environmentId: `env-${org}`,
        name: 'web',
        logSources: [
          { id: 'app', kind: 'ui.logs', cloudAccountId: `acct-${org}`, region: 'eu-west-1', logGroup: '/app' },
        ],
      },
    ],
    deploymentResources: [
      {
        id: `dr-${org}`,
        moduleInstanceId: `mi-${org}`,
        type: 'ecs-task',
        cloudAccountId: `acct-${org}`,
        region: 'eu-west-1',
      },
    ],
    certificates: [
      { id: `cert-${org}`, moduleInstanceId: `mi-${org}`, domainName: `${org}.example.com`, status: 'ISSUED' },
    ],
  };
}

beforeAll(async () => {
  const a = orgWorld('a');
  const b = orgWorld('b');
  const world: Record<string, unknown[]> = {};
  for (const k of Object.keys(a)) world[k] = [...a[k]!, ...b[k]!];
  ({ store, close: closeStore } = await openSeededStore(world));
  // A seed refuses these links (another organization's account), so they are written as a database
  // from before that check, or a hand-written row, would hold them.
  await sql`insert into log_sources (module_instance_id, id, kind, cloud_account_id, region, log_group)
    values ('mi-a', 'crossed', 'ui.logs', 'acct-b', 'eu-west-1', '/app')`.execute(store.db);
  await sql`insert into deployment_resources (id, module_instance_id, type, cloud_account_id, region)
    values ('dr-crossed', 'mi-a', 'ecs-task', 'acct-b', 'eu-west-1')`.execute(store.db);
  tenancy = storeTenancy(store.db);
}, 60_000);

afterAll(async () => {
  await closeStore?.();
});

describe('the tenancy module', () => {
  it('answers the owning organization of every kind of object', async () => {
    for (const org of ['a', 'b'] as const) {
      const owner = `org-${org}`;
      expect(await tenancy.project(`prj-${org}`)).toBe(owner);
      expect(await tenancy.environment(`env-${org}`)).toBe(owner);
      expect(await tenancy.moduleInstance(`mi-${org}`)).toBe(owner);
      expect(await tenancy.certificate(`cert-${org}`)).toBe(owner);
      expect(await tenancy.cloudAccount(`acct-${org}`)).toBe(owner);
      expect(await tenancy.deploymentResource(`dr-${org}`)).toBe(owner);
      expect(await tenancy.logSource({ moduleInstanceId: `mi-${org}`, logSourceId: 'app' })).toBe(owner);
    }
  });

  it('answers many module instances at once, leaving out the ids that do not exist', async () => {
    const owners = await tenancy.moduleInstances(['mi-a', 'mi-b', 'mi-nope', 'mi-a']);
    expect(Object.fromEntries(owners)).toEqual({ 'mi-a': 'org-a', 'mi-b': 'org-b' });
    expect((await tenancy.moduleInstances([])).size).toBe(0);
  });

  it("treats a log source or deployment resource using another organization's account as nonexistent", async () => {
    expect(await tenancy.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'crossed' })).toBeUndefined();
    expect(await tenancy.deploymentResource('dr-crossed')).toBeUndefined();
    // Their module instance and the account are still there, each answering its own owner.
    expect(await tenancy.moduleInstance('mi-a')).toBe('org-a');
    expect(await tenancy.cloudAccount('acct-b')).toBe('org-b');
  });

  it('answers undefined for ids that exist nowhere', async () => {
    expect(await tenancy.project('nope')).toBeUndefined();
    expect(await tenancy.environment('nope')).toBeUndefined();
    expect(await tenancy.moduleInstance('nope')).toBeUndefined();
    expect(await tenancy.certificate('nope')).toBeUndefined();
    expect(await tenancy.cloudAccount('nope')).toBeUndefined();
    expect(await tenancy.deploymentResource('nope')).toBeUndefined();
    expect(await tenancy.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'nope' })).toBeUndefined();
    expect(await tenancy.logSource({ moduleInstanceId: 'nope', logSourceId: 'app' })).toBeUndefined();
    // An id of one kind is not an id of another.
    expect(await tenancy.moduleInstance('env-a')).toBeUndefined();
    expect(await tenancy.project('org-a')).toBeUndefined();
  });

  it('answers what an open transaction wrote, and nothing of it after a rollback', async () => {
    const rollback = new Error('rollback');
    await expect(
      store.db.transaction().execute(async (trx) => {
        await trx.updateTable('projects').set({ organization_id: 'org-b' }).where('id', '=', 'prj-a').execute();
        const inside = storeTenancy(trx);
        expect(await inside.moduleInstance('mi-a')).toBe('org-b');
        expect(await inside.certificate('cert-a')).toBe('org-b');
        // Moved to org B, the instance now reads through org B's account, and no longer through its own.
        expect(await inside.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'crossed' })).toBe('org-b');
        expect(await inside.logSource({ moduleInstanceId: 'mi-a', logSourceId: 'app' })).toBeUndefined();
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await tenancy.moduleInstance('mi-a')).toBe('org-a');
  });

  it('lists exactly the links that break the rule', async () => {
    expect(await crossLinks(store.db)).toEqual([
      {
        kind: 'log-source',
        id: 'crossed',
        moduleInstanceId: 'mi-a',
        instanceOrganizationId: 'org-a',
        cloudAccountId: 'acct-b',
        accountOrganizationId: 'org-b',
      },
      {
        kind: 'deployment-resource',
        id: 'dr-crossed',
        moduleInstanceId: 'mi-a',
        instanceOrganizationId: 'org-a',
        cloudAccountId: 'acct-b',
        accountOrganizationId: 'org-b',
      },
    ]);
  });
});
