import { canRead, type Caller } from '../core/caller.js';
import { IDENTITY_PROVIDERS, type IdentityProvider } from '../core/enums.js';
import { appError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { findPermittedIdentityProviders } from '../store/repositories/identity-providers.js';
import { CachedLookup, NOT_IN_MEMORY } from './caches/cached-lookup.js';
import type { CacheInvalidation } from './caches/invalidation.js';
import { type CacheOptions, FOUND_TTL_MS } from './caches/options.js';

const ORDER = new Map<string, number>(IDENTITY_PROVIDERS.map((p, i) => [p, i]));

export class OrganizationService {
  readonly #providers: CachedLookup<readonly IdentityProvider[]>;

  constructor(db: Db, caches: CacheInvalidation, options: CacheOptions) {
    this.#providers = new CachedLookup<readonly IdentityProvider[]>(caches, {
      tables: ['organizations'],
      maxEntries: options.maxEntries,
      ttlMs: FOUND_TTL_MS,
      missingTtlMs: options.missingTtlMs,
      load: async (organizationId) => {
        const stored = await findPermittedIdentityProviders(db, organizationId);
        if (stored === undefined) return undefined;
        const unique = new Set(stored.filter((p): p is IdentityProvider => ORDER.has(p)));
        return Object.freeze([...unique].sort((a, b) => ORDER.get(a)! - ORDER.get(b)!));
      },
    });
  }

  /** What an organization permits, whoever asks (sessions' checks, the sign-in page); undefined when unknown. */
  permitted(organizationId: string): Promise<readonly IdentityProvider[] | undefined> {
    return this.#providers.get(organizationId);
  }

  /**
   * An unknown organization and one the caller is not a member of answer the
   * same 403: the endpoint declares no 404, and existence must not leak.
   */
  async permittedIdentityProviders(caller: Caller, organizationId: string): Promise<IdentityProvider[]> {
    if (!canRead(caller, organizationId)) throw appError('auth:permission:denied');
    return answerOf(await this.#providers.get(organizationId));
  }

  /** `permittedIdentityProviders` answered from memory, without a promise; `NOT_IN_MEMORY` when only the database can tell. */
  knownPermittedIdentityProviders(caller: Caller, organizationId: string): IdentityProvider[] | typeof NOT_IN_MEMORY {
    if (!canRead(caller, organizationId)) throw appError('auth:permission:denied');
    const known = this.#providers.peek(organizationId);
    return known === NOT_IN_MEMORY ? NOT_IN_MEMORY : answerOf(known);
  }
}

function answerOf(providers: readonly IdentityProvider[] | undefined): IdentityProvider[] {
  if (providers === undefined) throw appError('auth:permission:denied');
  return [...providers];
}
