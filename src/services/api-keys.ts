import { roleIn, type Caller } from '../core/caller.js';
import { decodeApiKeyCursor, encodeApiKeyCursor } from '../core/api-key-cursor.js';
import { WRITE_ROLES, type Role } from '../core/enums.js';
import { DEFAULT_PAGE_LIMIT } from '../core/schemas/common.js';
import { appError } from '../core/errors.js';
import {
  MAX_KEY_LIFETIME_DAYS,
  type ApiKey,
  type ApiKeyPage,
  type CreatedApiKey,
  type ListApiKeysQuery,
  type NewApiKey,
} from '../core/schemas/api-keys.js';
import { generateKeyId, generateToken, hashToken } from '../core/tokens.js';
import type { Db } from '../store/db.js';
import type { CursorSecret } from './cursor-secret.js';
import {
  countOrganizationKeys,
  findKeyHolder,
  findOrganizationKey,
  insertApiKey,
  listOrganizationKeys,
  organizationExists,
  revokeApiKey,
  type ApiKeyRecord,
  type KeyHolder,
} from '../store/repositories/api-keys.js';

/** Where audit lines go: the request's logger (pino), so each line carries the request id. */
export interface AuditLog {
  info(fields: Record<string, unknown>, message: string): void;
}

const DAY_MS = 86_400_000;

/**
 * How much a holder can do in an organization. A superadmin outranks an owner: a key of theirs,
 * even scoped to one organization, still sees internal error details.
 */
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };
const SUPERADMIN_RANK = 4;

function holderRank(holder: KeyHolder): number | null {
  if (holder.superadmin) return SUPERADMIN_RANK;
  return holder.role === null ? null : RANK[holder.role];
}

/**
 * Owners and admins manage the keys scoped to their organization. Every refusal that names the
 * organization (unknown, not the caller's, or the caller's with a lesser role) is the same 403 as
 * `GET /organizations/{id}/permitted-identity-providers`, so the answer says nothing about whether
 * an organization exists. A key only ever gets or loses power no greater than its manager's own.
 */
export class ApiKeyService {
  constructor(
    private readonly db: Db,
    private readonly cursorSecret: CursorSecret,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async create(caller: Caller, organizationId: string, input: NewApiKey, audit: AuditLog): Promise<CreatedApiKey> {
    const callerRank = await this.authorize(caller, organizationId);
    const expiresAt = this.expiry(input);
    const principalId = input.principalId ?? caller.principalId;
    const holder = await findKeyHolder(this.db, principalId, organizationId);
    const rank = holder === undefined ? null : holderRank(holder);
    // A principal with no power here answers like a missing one: the organization's admins learn nothing
    // about principals outside it. (A superadmin caller may name another superadmin, who has power everywhere.)
    if (rank === null || (rank === SUPERADMIN_RANK && holder?.role === null && !caller.superadmin)) {
      throw appError('api-keys:principal:not-found', { metadata: { principalId } });
    }
    if (rank > callerRank) {
      throw appError('auth:permission:denied', {
        description: 'A key cannot carry more power than your own: the principal has a higher role here.',
      });
    }
    const keyId = generateKeyId();
    const token = generateToken(keyId);
    const record = await insertApiKey(this.db, {
      id: keyId,
      principalId,
      organizationId,
      tokenHash: hashToken(token),
      expiresAt,
      name: input.name ?? null,
      createdBy: caller.principalId,
    });
    audit.info(
      {
        audit: 'api-key.created',
        actorPrincipalId: caller.principalId,
        actorKeyId: caller.keyId,
        organizationId,
        keyId,
        principalId,
        expiresAt: expiresAt?.toISOString() ?? null,
      },
      'api key created',
    );
    return { ...toApiKey(record, organizationId), token };
  }

  async list(caller: Caller, organizationId: string, query: ListApiKeysQuery): Promise<ApiKeyPage> {
    const cursorKey = await this.cursorSecret.get();
    // A forged or foreign cursor is refused before any statement runs: its seal, its whole shape and its
    // organization are checked without the database.
    const after = query.cursor === undefined ? undefined : decodeApiKeyCursor(query.cursor, cursorKey, organizationId);
    await this.authorize(caller, organizationId);
    const limit = query.limit ?? DEFAULT_PAGE_LIMIT;
    const [rows, totalCount] = await Promise.all([
      listOrganizationKeys(this.db, organizationId, limit + 1, after),
      countOrganizationKeys(this.db, organizationId),
    ]);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    const meta: ApiKeyPage['meta'] = { limit: limit, totalCount };
    if (rows.length > limit && last !== undefined) {
      meta.nextCursor = encodeApiKeyCursor({ organizationId, ...last.position }, cursorKey);
    }
    return { data: page.map((r) => toApiKey(r.key, organizationId)), meta };
  }

  /**
   * Idempotent, like DELETE: revoking a revoked key answers the same and keeps its first revocation.
   * A key of another organization, or an unscoped one, is not this organization's: 404 as for none.
   */
  async revoke(caller: Caller, organizationId: string, keyId: string, audit: AuditLog): Promise<void> {
    const callerRank = await this.authorize(caller, organizationId);
    const key = await findOrganizationKey(this.db, organizationId, keyId);
    if (key === undefined) throw appError('api-keys:key:not-found');
    const holder = await findKeyHolder(this.db, key.principalId, organizationId);
    const rank = holder === undefined ? null : holderRank(holder);
    if (rank !== null && rank > callerRank) {
      throw appError('auth:permission:denied', {
        description: "You cannot revoke a key that carries more power than your own (a higher role's).",
      });
    }
    const outcome = await revokeApiKey(this.db, keyId, this.now(), caller.principalId);
    if (outcome === 'missing') throw appError('api-keys:key:not-found');
    audit.info(
      {
        audit: 'api-key.revoked',
        actorPrincipalId: caller.principalId,
        actorKeyId: caller.keyId,
        organizationId,
        keyId,
        principalId: key.principalId,
        alreadyRevoked: outcome === 'already-revoked',
      },
      'api key revoked',
    );
  }

  /** The caller's rank in the organization when it may manage keys there; 403 otherwise. */
  private async authorize(caller: Caller, organizationId: string): Promise<number> {
    const role = roleIn(caller, organizationId);
    if (role === null || !WRITE_ROLES.has(role)) throw appError('auth:permission:denied');
    // A superadmin reaches every organization id, existing or not: an unknown one is refused the same way.
    if (!(await organizationExists(this.db, organizationId))) throw appError('auth:permission:denied');
    return caller.superadmin ? SUPERADMIN_RANK : RANK[role];
  }

  private expiry(input: NewApiKey): Date | null {
    const now = this.now().getTime();
    if (input.expiresAt !== undefined && input.expiresInDays !== undefined) {
      throw appError('api-keys:expiry:invalid', { description: 'Give expiresAt or expiresInDays, not both.' });
    }
    if (input.expiresInDays !== undefined) return new Date(now + input.expiresInDays * DAY_MS);
    if (input.expiresAt === undefined) return null;
    const at = Date.parse(input.expiresAt);
    if (!Number.isFinite(at) || at <= now || at > now + MAX_KEY_LIFETIME_DAYS * DAY_MS) {
      throw appError('api-keys:expiry:invalid', {
        description: `expiresAt must be in the future and at most ${MAX_KEY_LIFETIME_DAYS} days away.`,
      });
    }
    return new Date(at);
  }
}

function toApiKey(record: ApiKeyRecord, organizationId: string): ApiKey {
  const key: ApiKey = {
    id: record.id,
    principalId: record.principalId,
    organizationId: record.organizationId ?? organizationId,
    createdAt: record.createdAt.toISOString(),
  };
  if (record.name !== null) key.name = record.name;
  if (record.createdBy !== null) key.createdBy = record.createdBy;
  if (record.expiresAt !== null) key.expiresAt = record.expiresAt.toISOString();
  if (record.revokedAt !== null) key.revokedAt = record.revokedAt.toISOString();
  if (record.revokedBy !== null) key.revokedBy = record.revokedBy;
  return key;
}
