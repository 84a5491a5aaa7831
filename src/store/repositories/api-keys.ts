import { sql, type Selectable } from 'kysely';
import type { Role } from '../../core/caller.js';
import type { Executor } from '../db.js';
import type { ApiKeysTable } from '../schema.js';

/** A stored key, without its hash: nothing read here can authenticate anyone. */
export interface ApiKeyRecord {
  id: string;
  principalId: string;
  organizationId: string | null;
  name: string | null;
  createdAt: Date;
  createdBy: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  revokedBy: string | null;
}

export interface NewApiKey {
  id: string;
  principalId: string;
  organizationId: string | null;
  tokenHash: string;
  expiresAt: Date | null;
  name?: string | null;
  createdBy?: string | null;
}

/**
 * Where a page of an organization's keys ends: `createdAt` is the exact stored time (microseconds,
 * as text), which a JavaScript Date would round to milliseconds and so skip or repeat keys.
 */
export interface KeyPosition {
  createdAt: string;
  id: string;
}

/** A principal as a key holder in one organization: its role there (null: none) and whether it is a superadmin. */
export interface KeyHolder {
  id: string;
  superadmin: boolean;
  role: Role | null;
}

export type RevokeOutcome = 'revoked' | 'already-revoked' | 'missing';

const COLUMNS = [
  'id',
  'principal_id',
  'organization_id',
  'name',
  'created_at',
  'created_by',
  'expires_at',
  'revoked_at',
  'revoked_by',
] as const;

type KeyRow = Pick<Selectable<ApiKeysTable>, (typeof COLUMNS)[number]>;

const date = (v: Date | string | null): Date | null => (v === null ? null : new Date(v));

function toRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    principalId: row.principal_id,
    organizationId: row.organization_id,
    name: row.name,
    createdAt: new Date(row.created_at),
    createdBy: row.created_by,
    expiresAt: date(row.expires_at),
    revokedAt: date(row.revoked_at),
    revokedBy: row.revoked_by,
  };
}

export async function insertApiKey(db: Executor, key: NewApiKey): Promise<ApiKeyRecord> {
  const row = await db
    .insertInto('api_keys')
    .values({
      id: key.id,
      principal_id: key.principalId,
      organization_id: key.organizationId,
      token_hash: key.tokenHash,
      expires_at: key.expiresAt,
      revoked_at: null,
      name: key.name ?? null,
      created_by: key.createdBy ?? null,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/** The key, if it is scoped to this organization (unscoped keys and other organizations' keys are not its). */
export async function findOrganizationKey(
  db: Executor,
  organizationId: string,
  keyId: string,
): Promise<ApiKeyRecord | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('id', '=', keyId)
    .executeTakeFirst();
  return row === undefined ? undefined : toRecord(row);
}

const POSITION = sql<string>`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Up to `limit` keys of the organization, newest first, after `after`; each with its position. */
export async function listOrganizationKeys(
  db: Executor,
  organizationId: string,
  limit: number,
  after?: KeyPosition,
): Promise<{ key: ApiKeyRecord; position: KeyPosition }[]> {
  let q = db
    .selectFrom('api_keys')
    .select([...COLUMNS, POSITION.as('position')])
    .where('organization_id', '=', organizationId);
  if (after !== undefined) {
    q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}::timestamptz, ${after.id})`);
  }
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map((row) => ({ key: toRecord(row), position: { createdAt: row.position, id: row.id } }));
}

export async function countOrganizationKeys(db: Executor, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Revokes a key once: a key already revoked keeps the time and author of its first revocation, so
 * racing revocations on any replica cannot overwrite each other.
 */
export async function revokeApiKey(
  db: Executor,
  keyId: string,
  at: Date,
  by: string | null = null,
): Promise<RevokeOutcome> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at, revoked_by: by })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows > 0n) return 'revoked';
  const exists = await db.selectFrom('api_keys').select('id').where('id', '=', keyId).executeTakeFirst();
  return exists === undefined ? 'missing' : 'already-revoked';
}

/** The principal with its role in the organization, or undefined when no such principal exists. */
export async function findKeyHolder(
  db: Executor,
  principalId: string,
  organizationId: string,
): Promise<KeyHolder | undefined> {
  const row = await db
    .selectFrom('principals as p')
    .leftJoin('memberships as m', (join) =>
      join.onRef('m.principal_id', '=', 'p.id').on('m.organization_id', '=', organizationId),
    )
    .select(['p.id', 'p.superadmin', 'm.role'])
    .where('p.id', '=', principalId)
    .executeTakeFirst();
  return row === undefined ? undefined : { id: row.id, superadmin: row.superadmin, role: row.role ?? null };
}

export async function principalExists(db: Executor, principalId: string): Promise<boolean> {
  const row = await db.selectFrom('principals').select('id').where('id', '=', principalId).executeTakeFirst();
  return row !== undefined;
}

export async function organizationExists(db: Executor, organizationId: string): Promise<boolean> {
  const row = await db.selectFrom('organizations').select('id').where('id', '=', organizationId).executeTakeFirst();
  return row !== undefined;
}
