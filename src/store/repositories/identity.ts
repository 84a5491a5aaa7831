import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Executor } from '../db.js';

/** What the caller's credential does not carry: names, the key's label and expiry. Never the token hash. */
export interface CallerDetails {
  principalName: string;
  keyName: string | null;
  expiresAt: Date | null;
  /** Those of the named organizations that exist, in no particular order. */
  organizations: { id: string; name: string }[];
}

/**
 * The key with its principal's name and the names of `organizationIds`, in one statement; undefined when the
 * key no longer exists. `organizationIds` are those the authenticated caller already carries (its memberships),
 * so the statement is as bounded as the authentication that loaded them.
 */
export async function findCallerDetails(
  db: Executor,
  keyId: string,
  organizationIds: readonly string[],
): Promise<CallerDetails | undefined> {
  const ids = [...new Set(organizationIds)];
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('principals as p', 'p.id', 'k.principal_id')
    .select((eb) => [
      'p.name as principalName',
      'k.name as keyName',
      'k.expires_at as expiresAt',
      jsonArrayFrom(
        eb
          .selectFrom('organizations as o')
          .select(['o.id', 'o.name'])
          .where((inner) => (ids.length === 0 ? sql<boolean>`false` : inner('o.id', 'in', ids))),
      ).as('organizations'),
    ])
    .where('k.id', '=', keyId)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return {
    principalName: row.principalName,
    keyName: row.keyName,
    expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt),
    organizations: row.organizations,
  };
}
