import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Role } from '../../core/caller.js';
import { hashesEqual } from '../../core/tokens.js';
import type { Executor } from '../db.js';

/** What a token hash authenticates as: the key, its principal and the principal's memberships. */
export interface KeyCredential {
  keyId: string;
  principalId: string;
  superadmin: boolean;
  /** Set when the key is scoped to one organization. */
  keyOrganizationId: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  memberships: { organizationId: string; role: Role }[];
}

/**
 * The key whose token hashes to `tokenHash`, whatever its state (expired, revoked: the caller decides
 * against its clock), in one round trip; undefined when no key has that hash.
 */
export async function findCredentialByTokenHash(db: Executor, tokenHash: string): Promise<KeyCredential | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('principals', 'principals.id', 'api_keys.principal_id')
    .select((eb) => [
      'api_keys.id as keyId',
      'api_keys.token_hash as tokenHash',
      'api_keys.organization_id as keyOrganizationId',
      'api_keys.expires_at as expiresAt',
      'api_keys.revoked_at as revokedAt',
      'principals.id as principalId',
      'principals.superadmin as superadmin',
      jsonArrayFrom(
        eb
          .selectFrom('memberships')
          .select(['memberships.organization_id as organizationId', 'memberships.role as role'])
          .whereRef('memberships.principal_id', '=', 'principals.id'),
      ).as('memberships'),
    ])
    .where('api_keys.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (row === undefined || !hashesEqual(row.tokenHash, tokenHash)) return undefined;
  return {
    keyId: row.keyId,
    principalId: row.principalId,
    superadmin: row.superadmin,
    keyOrganizationId: row.keyOrganizationId,
    expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt),
    revokedAt: row.revokedAt === null ? null : new Date(row.revokedAt),
    memberships: row.memberships,
  };
}
