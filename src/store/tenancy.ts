import type { Executor } from './db.js';

/** A module instance with the chain that places it in an organization. */
export interface InstanceScope {
  id: string;
  name: string;
  environmentId: string;
  projectId: string;
  organizationId: string;
}

export async function findInstanceScope(db: Executor, id: string): Promise<InstanceScope | undefined> {
  const row = await db
    .selectFrom('module_instances as mi')
    .innerJoin('environments as e', 'e.id', 'mi.environment_id')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .select(['mi.id', 'mi.name', 'mi.environment_id', 'e.project_id', 'p.organization_id'])
    .where('mi.id', '=', id)
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : {
        id: row.id,
        name: row.name,
        environmentId: row.environment_id,
        projectId: row.project_id,
        organizationId: row.organization_id,
      };
}
