import type { CloudAccount } from '../../core/log-query/types.js';
import type { Executor } from '../db.js';

/** A cloud account as the log backends need it, or undefined. */
export async function findCloudAccount(db: Executor, id: string): Promise<CloudAccount | undefined> {
  const r = await db
    .selectFrom('cloud_accounts')
    .select(['id', 'organization_id', 'provider', 'region', 'role_arn', 'external_id', 'endpoint'])
    .where('id', '=', id)
    .executeTakeFirst();
  return r === undefined
    ? undefined
    : {
        id: r.id,
        organizationId: r.organization_id,
        provider: r.provider,
        region: r.region,
        roleArn: r.role_arn,
        externalId: r.external_id,
        endpoint: r.endpoint,
      };
}

/** What an AWS client needs of an `aws` cloud account. */
export type AwsAccountSettings = Omit<CloudAccount, 'organizationId' | 'provider'>;

/** An organization's `aws` cloud accounts, by id. */
export async function listAwsAccounts(db: Executor, organizationId: string): Promise<AwsAccountSettings[]> {
  const rows = await db
    .selectFrom('cloud_accounts')
    .select(['id', 'region', 'role_arn', 'external_id', 'endpoint'])
    .where('organization_id', '=', organizationId)
    .where('provider', '=', 'aws')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    region: r.region,
    roleArn: r.role_arn,
    externalId: r.external_id,
    endpoint: r.endpoint,
  }));
}
