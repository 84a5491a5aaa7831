import type { Caller, Role } from '../core/caller.js';
import { hashToken } from '../core/tokens.js';
import type { Db } from '../store/db.js';
import { findCredentialByTokenHash } from '../store/repositories/principals.js';
import { CachedLookup, NOT_IN_MEMORY } from './caches/cached-lookup.js';
import type { CacheInvalidation } from './caches/invalidation.js';
import { type CacheOptions, FOUND_TTL_MS } from './caches/options.js';

/** A key as the cache keeps it: its validity is checked against the clock on every use. */
interface KnownKey {
  caller: Caller;
  expiresAtMs: number | null;
  revokedAtMs: number | null;
}

/** Tables whose writes can change who a token is, what it may do, or whether it works at all. */
const AUTH_TABLES = ['api_keys', 'principals', 'memberships'] as const;

export class AuthenticationService {
  readonly #keys: CachedLookup<KnownKey>;

  constructor(db: Db, caches: CacheInvalidation, options: CacheOptions) {
    this.#keys = new CachedLookup<KnownKey>(caches, {
      tables: AUTH_TABLES,
      maxEntries: options.maxEntries,
      ttlMs: FOUND_TTL_MS,
      // An unknown token repeated (a client with a deleted key retrying) costs one lookup per interval;
      // a key created meanwhile flushes it (api_keys changed), so it works at once.
      missingTtlMs: options.missingTtlMs,
      load: async (hash) => {
        const credential = await findCredentialByTokenHash(db, hash);
        if (credential === undefined) return undefined;
        return {
          caller: {
            principalId: credential.principalId,
            keyId: credential.keyId,
            superadmin: credential.superadmin,
            keyOrganizationId: credential.keyOrganizationId,
            memberships: new Map<string, Role>(credential.memberships.map((m) => [m.organizationId, m.role])),
          },
          expiresAtMs: credential.expiresAt?.getTime() ?? null,
          revokedAtMs: credential.revokedAt?.getTime() ?? null,
        };
      },
    });
  }

  /**
   * Resolves a bearer token to its caller, or null for an unknown, revoked or expired one (they are
   * indistinguishable to the client). Expiry and revocation times are compared with `now` on every call,
   * cached or not.
   */
  authenticate(token: string, now = new Date()): Promise<Caller | null> {
    return this.authenticateHash(hashToken(token), now);
  }

  /** `authenticate` for a token already hashed (`hashToken`): the request path hashes each token once. */
  authenticateHash(tokenHash: string, now = new Date()): Promise<Caller | null> {
    return this.#keys.get(tokenHash).then((key) => callerAt(key, now));
  }

  /** `authenticateHash` answered from memory, without a promise; `NOT_IN_MEMORY` when the database must be asked. */
  knownCaller(tokenHash: string, now = new Date()): Caller | null | typeof NOT_IN_MEMORY {
    const known = this.#keys.peek(tokenHash);
    return known === NOT_IN_MEMORY ? NOT_IN_MEMORY : callerAt(known, now);
  }

  /** Entries the token cache holds (tests: the bound under a flood of unknown tokens). */
  get cacheSize(): { found: number; missing: number } {
    return this.#keys.size;
  }
}

/** The key's caller at `now`, or null for a key that is unknown, revoked or expired. */
function callerAt(key: KnownKey | undefined, now: Date): Caller | null {
  if (key === undefined) return null;
  const at = now.getTime();
  if (key.revokedAtMs !== null && key.revokedAtMs <= at) return null;
  if (key.expiresAtMs !== null && key.expiresAtMs <= at) return null;
  return key.caller;
}
