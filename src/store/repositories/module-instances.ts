import type { Executor } from '../db.js';

/** The ids of an environment's module instances. */
export async function moduleInstanceIdsOfEnvironment(db: Executor, environmentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('module_instances')
    .select('id')
    .where('environment_id', '=', environmentId)
    .execute();
  return rows.map((r) => r.id);
}
