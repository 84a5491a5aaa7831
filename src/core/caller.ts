import { type IdentityProvider, type Role, WRITE_ROLES } from './enums.js';
import { appError } from './errors.js';

export type { Role };

/** How a person signed in: the identity provider of the session, for the organizations' permitted lists. */
export interface SessionCredential {
  provider: IdentityProvider;
  /** When the session ends at the latest. */
  expiresAt: Date;
}

/** Who is calling, resolved from the bearer token or the session cookie. */
export interface Caller {
  principalId: string;
  /** The API key of a bearer token; null for a session. */
  keyId: string | null;
  /** Set for a session: how the person signed in. */
  session?: SessionCredential;
  superadmin: boolean;
  /** Set when the key is scoped to one organization. */
  keyOrganizationId: string | null;
  /** The organizations the caller may act in, with its role there. */
  memberships: ReadonlyMap<string, Role>;
  /**
   * A session's memberships in organizations that do not permit its provider, each with what they permit: the
   * caller is refused there with 403 `auth:identity-provider:not-permitted` rather than treated as a stranger.
   */
  notPermitted?: ReadonlyMap<string, readonly IdentityProvider[]>;
}

/**
 * The caller's role in an organization, or null when it has none there. A session whose provider the organization
 * does not permit is refused there (403 `auth:identity-provider:not-permitted`, whose `action` names the permitted
 * ways): every permission check of every endpoint goes through here.
 */
export function roleIn(caller: Caller, organizationId: string): Role | null {
  const permitted = caller.notPermitted?.get(organizationId);
  if (permitted !== undefined) throw notPermittedError(caller, organizationId, permitted);
  if (caller.keyOrganizationId !== null && caller.keyOrganizationId !== organizationId) return null;
  if (caller.superadmin) return 'owner';
  return caller.memberships.get(organizationId) ?? null;
}

export function notPermittedError(caller: Caller, organizationId: string, permitted: readonly IdentityProvider[]) {
  const ways = permitted.length === 0 ? 'none' : permitted.join(', ');
  return appError('auth:identity-provider:not-permitted', {
    description:
      `Organization ${organizationId} does not permit signing in with ${caller.session?.provider ?? 'this method'}; ` +
      `it permits: ${ways}.`,
    action: {
      label: 'Sign in with a method this organization permits',
      url: `/ui/sign-in?organizationId=${encodeURIComponent(organizationId)}`,
    },
  });
}

export function canRead(caller: Caller, organizationId: string): boolean {
  return roleIn(caller, organizationId) !== null;
}

export function canWrite(caller: Caller, organizationId: string): boolean {
  const role = roleIn(caller, organizationId);
  return role !== null && WRITE_ROLES.has(role);
}

/** Organizations whose resources the caller can see; `null` means every one. */
export function visibleOrganizations(caller: Caller): string[] | null {
  if (caller.keyOrganizationId !== null) {
    return caller.superadmin || caller.memberships.has(caller.keyOrganizationId) ? [caller.keyOrganizationId] : [];
  }
  if (caller.superadmin) return null;
  return [...caller.memberships.keys()];
}
