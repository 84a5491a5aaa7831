import type { Executor } from '../db.js';

/** The identity providers an organization permits, as stored; undefined when there is no such organization. */
export async function findPermittedIdentityProviders(
  db: Executor,
  organizationId: string,
): Promise<string[] | undefined> {
  const row = await db
    .selectFrom('organizations')
    .select('permitted_identity_providers')
    .where('id', '=', organizationId)
    .executeTakeFirst();
  return row?.permitted_identity_providers;
}
