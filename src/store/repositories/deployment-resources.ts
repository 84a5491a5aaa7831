import type { Executor } from '../db.js';

export interface DeploymentResourceRow {
  id: string;
  moduleInstanceId: string;
  type: string;
  cloudAccountId: string;
  region: string;
  snapshot: unknown;
}

export async function findDeploymentResource(db: Executor, id: string): Promise<DeploymentResourceRow | undefined> {
  const r = await db
    .selectFrom('deployment_resources')
    .select(['id', 'module_instance_id', 'type', 'cloud_account_id', 'region', 'snapshot'])
    .where('id', '=', id)
    .executeTakeFirst();
  return r === undefined
    ? undefined
    : {
        id: r.id,
        moduleInstanceId: r.module_instance_id,
        type: r.type,
        cloudAccountId: r.cloud_account_id,
        region: r.region,
        snapshot: r.snapshot,
      };
}
