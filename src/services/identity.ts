import type { Caller, Role } from '../core/caller.js';
import { appError } from '../core/errors.js';
import type { CallerProfile } from '../core/schemas/identity.js';
import type { Db } from '../store/db.js';
import { findCallerDetails } from '../store/repositories/identity.js';

/** Code point order (as PostgreSQL's "C" collation), the same on every runtime and database. */
export const byCodePoints = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Who the bearer token or the session is: `GET /me`. */
export class IdentityService {
  constructor(private readonly db: Db) {}

  /**
   * The caller as the authentication resolved it (its memberships come from there), completed with names in one
   * statement. The organizations are those the key may act in with a membership role; a superadmin's key scoped to
   * an organization it is no member of lists that one as `owner`, which is how the key acts there.
   */
  async profile(caller: Caller): Promise<CallerProfile> {
    const roles = new Map<string, Role>();
    for (const [organizationId, role] of caller.memberships) {
      if (caller.keyOrganizationId === null || caller.keyOrganizationId === organizationId) {
        roles.set(organizationId, role);
      }
    }
    if (caller.superadmin && caller.keyOrganizationId !== null && !roles.has(caller.keyOrganizationId)) {
      roles.set(caller.keyOrganizationId, 'owner');
    }
    const details = await findCallerDetails(this.db, caller.principalId, caller.keyId, [...roles.keys()]);
    // The key (or the principal) was deleted since it was authenticated: it is no longer anyone.
    if (details === undefined) throw appError('auth:token:invalid');
    const organizations = details.organizations
      .map((o) => ({ id: o.id, name: o.name, role: roles.get(o.id)! }))
      .sort((a, b) => byCodePoints(a.name, b.name) || byCodePoints(a.id, b.id));
    return {
      principal: {
        id: caller.principalId,
        name: details.principalName,
        superadmin: caller.superadmin,
        ...(details.email === null ? {} : { email: details.email }),
      },
      ...(caller.keyId === null
        ? {}
        : {
            key: {
              id: caller.keyId,
              ...(details.keyName === null ? {} : { name: details.keyName }),
              ...(caller.keyOrganizationId === null ? {} : { organizationId: caller.keyOrganizationId }),
              ...(details.expiresAt === null ? {} : { expiresAt: details.expiresAt.toISOString() }),
            },
          }),
      ...(caller.session === undefined
        ? {}
        : { session: { provider: caller.session.provider, expiresAt: caller.session.expiresAt.toISOString() } }),
      organizations,
    };
  }
}
