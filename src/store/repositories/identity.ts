import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Executor } from '../db.js';

/** What the caller's credential does not carry: names, the key's label and expiry. Never the token hash. */
export interface CallerDetails {
  principalName: string;
  email: string | null;
  keyName: string | null;
  expiresAt: Date | null;
  /** Those of the named organizations that exist, in no particular order. */
  organizations: { id: string; name: string }[];
}

/**
 * The principal's name, its key's (when `keyId` is given) and the names of `organizationIds`, in one statement;
 * undefined when the principal, or the key, no longer exists. `organizationIds` are those the authenticated
 * caller already carries (its memberships), so the statement is as bounded as the authentication that loaded them.
 */
export async function findCallerDetails(
  db: Executor,
  principalId: string,
  keyId: string | null,
  organizationIds: readonly string[],
): Promise<CallerDetails | undefined> {
  const ids = [...new Set(organizationIds)];
  const row = await db
    .selectFrom('principals as p')
    .leftJoin('api_keys as k', (join) =>
      join.onRef('k.principal_id', '=', 'p.id').on('k.id', '=', keyId ?? sql<string>`null`),
    )
    .select((eb) => [
      'p.name as principalName',
      'p.email as email',
      'k.id as keyId',
      'k.name as keyName',
      'k.expires_at as expiresAt',
      jsonArrayFrom(
        eb
          .selectFrom('organizations as o')
          .select(['o.id', 'o.name'])
          .where((inner) => (ids.length === 0 ? sql<boolean>`false` : inner('o.id', 'in', ids))),
      ).as('organizations'),
    ])
    .where('p.id', '=', principalId)
    .executeTakeFirst();
  if (row === undefined || (keyId !== null && row.keyId === null)) return undefined;
  return {
    principalName: row.principalName,
    email: row.email,
    keyName: row.keyName,
    expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt),
    organizations: row.organizations,
  };
}
