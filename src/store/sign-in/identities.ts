import { sql } from 'kysely';
import type { Executor } from '../db.js';

export interface StoredIdentity {
  id: string;
  principalId: string;
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  createdAt: Date;
}

const COLUMNS = [
  'id',
  'principal_id as principalId',
  'provider',
  'issuer',
  'subject',
  'email',
  'created_at as createdAt',
] as const;

export async function findIdentity(
  db: Executor,
  key: { provider: string; issuer: string; subject: string },
): Promise<StoredIdentity | undefined> {
  return db
    .selectFrom('identities')
    .select(COLUMNS)
    .where('provider', '=', key.provider)
    .where('issuer', '=', key.issuer)
    .where('subject', '=', key.subject)
    .executeTakeFirst();
}

export async function listIdentities(db: Executor, principalId: string): Promise<StoredIdentity[]> {
  return db
    .selectFrom('identities')
    .select(COLUMNS)
    .where('principal_id', '=', principalId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1000)
    .execute();
}

/** Links an identity; a concurrent link of the same one keeps the first (returns the one that holds). */
export async function insertIdentity(
  db: Executor,
  row: { id: string; principalId: string; provider: string; issuer: string; subject: string; email: string | null },
): Promise<StoredIdentity | undefined> {
  await db
    .insertInto('identities')
    .values({
      id: row.id,
      principal_id: row.principalId,
      provider: row.provider,
      issuer: row.issuer,
      subject: row.subject,
      email: row.email,
    })
    .onConflict((oc) => oc.columns(['provider', 'issuer', 'subject']).doNothing())
    .execute();
  return findIdentity(db, row);
}

/** Unlinks one identity of one principal; its sessions end with it (ON DELETE CASCADE). */
export async function deleteIdentity(db: Executor, principalId: string, identityId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('identities')
    .where('principal_id', '=', principalId)
    .where('id', '=', identityId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The principals whose email is `email` (without case): linking by verified email needs exactly one. */
export async function principalsByEmail(db: Executor, email: string): Promise<{ id: string }[]> {
  return db.selectFrom('principals').select('id').where(sql`lower(email)`, '=', email.toLowerCase()).limit(2).execute();
}

/** The principal a password sign-in names, with its hash; undefined for an unknown email. */
export async function findPasswordCredential(
  db: Executor,
  email: string,
): Promise<{ principalId: string; passwordHash: string | null } | undefined> {
  return db
    .selectFrom('principals')
    .select(['id as principalId', 'password_hash as passwordHash'])
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

/** Sets a principal's password hash; returns false for an unknown principal. */
export async function setPasswordHash(db: Executor, principalId: string, hash: string): Promise<boolean> {
  const result = await db
    .updateTable('principals')
    .set({ password_hash: hash })
    .where('id', '=', principalId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The organizations a principal belongs to (an admin may unlink only a principal of theirs alone). */
export async function membershipsOf(db: Executor, principalId: string): Promise<{ organizationId: string }[]> {
  return db
    .selectFrom('memberships')
    .select('organization_id as organizationId')
    .where('principal_id', '=', principalId)
    .execute();
}
