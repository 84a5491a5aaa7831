import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Role } from '../../core/enums.js';
import { hashesEqual } from '../../core/tokens.js';
import type { Executor } from '../db.js';

/** A session as authentication needs it: its principal with memberships, its provider and its times. */
export interface StoredSession {
  principalId: string;
  provider: string;
  expiresAt: Date;
  lastSeenAt: Date;
  memberships: { organizationId: string; role: Role }[];
}

export async function insertSession(
  db: Executor,
  row: { idHash: string; principalId: string; provider: string; identityId: string | null; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id_hash: row.idHash,
      principal_id: row.principalId,
      provider: row.provider,
      identity_id: row.identityId,
      expires_at: row.expiresAt,
    })
    .execute();
}

/** The session whose id hashes to `idHash`, whatever its times (the caller decides against its clock). */
export async function findSession(db: Executor, idHash: string): Promise<StoredSession | undefined> {
  const row = await db
    .selectFrom('sessions as s')
    .select((eb) => [
      's.id_hash as idHash',
      's.principal_id as principalId',
      's.provider',
      's.expires_at as expiresAt',
      's.last_seen_at as lastSeenAt',
      jsonArrayFrom(
        eb
          .selectFrom('memberships as m')
          .select(['m.organization_id as organizationId', 'm.role as role'])
          .whereRef('m.principal_id', '=', 's.principal_id'),
      ).as('memberships'),
    ])
    .where('s.id_hash', '=', idHash)
    .executeTakeFirst();
  if (row === undefined || !hashesEqual(row.idHash, idHash)) return undefined;
  return {
    principalId: row.principalId,
    provider: row.provider,
    expiresAt: new Date(row.expiresAt),
    lastSeenAt: new Date(row.lastSeenAt),
    memberships: row.memberships,
  };
}

/** Records a use; no trigger fires on it (migration 011), so no cache anywhere is flushed. */
export async function touchSession(db: Executor, idHash: string, at: Date): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
}

export async function deleteSession(db: Executor, idHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
}

/** Ends every session of a principal (a password change); returns how many. */
export async function deleteSessionsOf(db: Executor, principalId: string, provider?: string): Promise<number> {
  let query = db.deleteFrom('sessions').where('principal_id', '=', principalId);
  if (provider !== undefined) query = query.where('provider', '=', provider);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Drops sessions past their absolute expiry or idle too long, and sign-in attempts past theirs. */
export async function deleteExpired(db: Executor, now: Date, idleMs: number): Promise<void> {
  const idleSince = new Date(now.getTime() - idleMs);
  await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
    .execute();
  await db.deleteFrom('sign_in_attempts').where('expires_at', '<=', now).execute();
}
