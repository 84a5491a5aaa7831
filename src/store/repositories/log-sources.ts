import type { CloudAccount } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';
import { logSourceOwners } from '../tenancy.js';

export interface LogSourceWithAccount {
  moduleInstanceId: string;
  id: string;
  logGroup: string;
  logStreamPrefix: string | null;
  region: string;
  account: CloudAccount;
}

/**
 * The log sources of a kind of these module instances, with the account each reads through, by
 * (module instance, id). Only sources that exist under the tenancy rule: one reading through
 * another organization's account is left out.
 */
export async function listLogSourcesOfInstances(
  db: Executor,
  moduleInstanceIds: readonly string[],
  kind: string,
): Promise<LogSourceWithAccount[]> {
  if (moduleInstanceIds.length === 0) return [];
  const rows = await db
    .selectFrom('log_sources as ls')
    .innerJoin(logSourceOwners(db).as('own'), (join) =>
      join.onRef('own.module_instance_id', '=', 'ls.module_instance_id').onRef('own.log_source_id', '=', 'ls.id'),
    )
    .innerJoin('cloud_accounts as a', 'a.id', 'ls.cloud_account_id')
    .select([
      'ls.module_instance_id',
      'ls.id',
      'ls.log_group',
      'ls.log_stream_prefix',
      'ls.region',
      'a.id as account_id',
      'a.organization_id',
      'a.provider',
      'a.region as account_region',
      'a.role_arn',
      'a.external_id',
      'a.endpoint',
    ])
    .where('ls.module_instance_id', 'in', [...moduleInstanceIds])
    .where('ls.kind', '=', kind)
    .orderBy('ls.module_instance_id')
    .orderBy('ls.id')
    .execute();
  return rows.map((r) => ({
    moduleInstanceId: r.module_instance_id,
    id: r.id,
    logGroup: r.log_group,
    logStreamPrefix: r.log_stream_prefix,
    region: r.region,
    account: {
      id: r.account_id,
      organizationId: r.organization_id,
      provider: r.provider,
      region: r.account_region,
      roleArn: r.role_arn,
      externalId: r.external_id,
      endpoint: r.endpoint,
    },
  }));
}
