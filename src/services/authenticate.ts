import type { Db } from '../store/db.js';
import type { Caller, Role } from '../core/caller.js';
import { hashToken, hashesEqual } from '../core/tokens.js';

/**
 * Resolves a bearer token to its caller, or null for an unknown, revoked or
 * expired one (they are indistinguishable to the client).
 */
export async function authenticate(db: Db, token: string, now = new Date()): Promise<Caller | null> {
  const hash = hashToken(token);
  const key = await db
    .selectFrom('api_keys')
    .innerJoin('principals', 'principals.id', 'api_keys.principal_id')
    .select([
      'api_keys.id as keyId',
      'api_keys.token_hash as tokenHash',
      'api_keys.organization_id as keyOrganizationId',
      'api_keys.expires_at as expiresAt',
      'api_keys.revoked_at as revokedAt',
      'principals.id as principalId',
      'principals.superadmin as superadmin',
    ])
    .where('api_keys.token_hash', '=', hash)
    .executeTakeFirst();
  if (key === undefined || !hashesEqual(key.tokenHash, hash)) return null;
  if (key.revokedAt !== null && new Date(key.revokedAt) <= now) return null;
  if (key.expiresAt !== null && new Date(key.expiresAt) <= now) return null;
  const rows = await db
    .selectFrom('memberships')
    .select(['organization_id', 'role'])
    .where('principal_id', '=', key.principalId)
    .execute();
  return {
    principalId: key.principalId,
    keyId: key.keyId,
    superadmin: key.superadmin,
    keyOrganizationId: key.keyOrganizationId,
    memberships: new Map(rows.map((r) => [r.organization_id, r.role as Role])),
  };
}
