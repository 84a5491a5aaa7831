import { randomBytes } from 'node:crypto';
import type { Caller, Role } from '../../core/caller.js';
import { IDENTITY_PROVIDERS, type IdentityProvider } from '../../core/enums.js';
import { hashToken } from '../../core/tokens.js';
import type { Db } from '../../store/db.js';
import {
  deleteExpired,
  deleteSession,
  deleteSessionsOf,
  findSession,
  insertSession,
  touchSession,
} from '../../store/sign-in/sessions.js';
import { CachedLookup } from '../caches/cached-lookup.js';
import type { CacheInvalidation } from '../caches/invalidation.js';
import { type CacheOptions, FOUND_TTL_MS } from '../caches/options.js';
import type { OrganizationService } from '../organizations.js';

/** A session as the cache keeps it; `lastSeenMs` moves forward as this replica records uses. */
interface KnownSession {
  principalId: string;
  provider: IdentityProvider;
  expiresAtMs: number;
  lastSeenMs: number;
  memberships: { organizationId: string; role: Role }[];
}

/** Tables whose writes can end a session or change what it may do (identities: an unlink cascades). */
const SESSION_TABLES = ['sessions', 'principals', 'memberships', 'identities'] as const;
/** A use is written to the database at most this often per session (and the idle check is that coarse). */
const TOUCH_INTERVAL_MS = 60_000;
const KNOWN_PROVIDERS: ReadonlySet<string> = new Set(IDENTITY_PROVIDERS);

export interface SessionLifetimes {
  maxAgeMs: number;
  idleMs: number;
}

/** A new session's cookie value (shown once, never stored) and when it ends at the latest. */
export interface NewSession {
  id: string;
  expiresAt: Date;
}

/**
 * Server-side sessions: the cookie holds 32 random bytes, the database only their SHA-256. A session lasts
 * `maxAgeMs` at most and ends once unused for `idleMs`; it acts only in the organizations that permit the
 * provider it was made with, checked on every request against the organizations' cached lists (which the change
 * feed keeps current on every replica).
 */
export class SessionService {
  readonly #sessions: CachedLookup<KnownSession>;

  constructor(
    private readonly db: Db,
    private readonly caches: CacheInvalidation,
    options: CacheOptions,
    private readonly organizations: Pick<OrganizationService, 'permitted'>,
    private readonly lifetimes: SessionLifetimes,
  ) {
    this.#sessions = new CachedLookup<KnownSession>(caches, {
      tables: SESSION_TABLES,
      maxEntries: options.maxEntries,
      ttlMs: FOUND_TTL_MS,
      missingTtlMs: options.missingTtlMs,
      load: (idHash) => this.#load(idHash),
    });
  }

  async create(principalId: string, provider: IdentityProvider, identityId: string | null, now = new Date()) {
    const id = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + this.lifetimes.maxAgeMs);
    await insertSession(this.db, { idHash: hashToken(id), principalId, provider, identityId, expiresAt });
    return { id, expiresAt } satisfies NewSession;
  }

  /** The caller a session cookie stands for, or null when it is unknown, expired, idle too long or of nobody. */
  async authenticate(id: string, now = new Date()): Promise<Caller | null> {
    const idHash = hashToken(id);
    let session = await this.#sessions.get(idHash);
    if (session === undefined) return null;
    const at = now.getTime();
    if (session.expiresAtMs <= at) return null;
    // A principal that lost its last membership has nowhere to act: its sessions end.
    if (session.memberships.length === 0) {
      await deleteSession(this.db, idHash);
      return null;
    }
    if (at - session.lastSeenMs >= this.lifetimes.idleMs) {
      // Another replica may have recorded a later use than this one's cache knows of.
      const fresh = await this.#load(idHash);
      if (fresh === undefined || at - fresh.lastSeenMs >= this.lifetimes.idleMs) {
        await deleteSession(this.db, idHash);
        return null;
      }
      session.lastSeenMs = fresh.lastSeenMs;
      session = fresh;
    }
    if (at - session.lastSeenMs >= TOUCH_INTERVAL_MS) {
      session.lastSeenMs = at;
      await touchSession(this.db, idHash, now);
    }
    return this.#callerOf(session);
  }

  /**
   * Ends a session (sign-out); unknown ids are ignored. Returns once this replica's caches have heard of it, so the
   * next request here is refused (other replicas hear of it within the time a notification takes).
   */
  async end(id: string): Promise<void> {
    await deleteSession(this.db, hashToken(id));
    await this.caches.settle();
  }

  /** Ends every session of a principal, or only those made with `provider` (settled like `end`). */
  async endAllOf(principalId: string, provider?: IdentityProvider): Promise<number> {
    const ended = await deleteSessionsOf(this.db, principalId, provider);
    await this.caches.settle();
    return ended;
  }

  /** Removes ended sessions and sign-in attempts (run now and then; authentication never needs it). */
  sweep(now = new Date()): Promise<void> {
    return deleteExpired(this.db, now, this.lifetimes.idleMs);
  }

  async #load(idHash: string): Promise<KnownSession | undefined> {
    const stored = await findSession(this.db, idHash);
    if (stored === undefined || !KNOWN_PROVIDERS.has(stored.provider)) return undefined;
    return {
      principalId: stored.principalId,
      provider: stored.provider as IdentityProvider,
      expiresAtMs: stored.expiresAt.getTime(),
      lastSeenMs: stored.lastSeenAt.getTime(),
      memberships: stored.memberships,
    };
  }

  /**
   * The organizations that permit the session's provider become its memberships; the others are kept apart with
   * what they permit, for the 403 that names them. A session carries no superadmin power (docs/decisions.md).
   */
  async #callerOf(session: KnownSession): Promise<Caller> {
    const memberships = new Map<string, Role>();
    const notPermitted = new Map<string, readonly IdentityProvider[]>();
    const lists = await Promise.all(session.memberships.map((m) => this.organizations.permitted(m.organizationId)));
    session.memberships.forEach((m, i) => {
      const permitted = lists[i];
      if (permitted === undefined) return;
      if (permitted.includes(session.provider)) memberships.set(m.organizationId, m.role);
      else notPermitted.set(m.organizationId, permitted);
    });
    return {
      principalId: session.principalId,
      keyId: null,
      session: { provider: session.provider, expiresAt: new Date(session.expiresAtMs) },
      superadmin: false,
      keyOrganizationId: null,
      memberships,
      notPermitted,
    };
  }
}
