import { type Role, WRITE_ROLES } from './enums.js';

export type { Role };

/** Who is calling, resolved from the bearer token. */
export interface Caller {
  principalId: string;
  keyId: string;
  superadmin: boolean;
  /** Set when the key is scoped to one organization. */
  keyOrganizationId: string | null;
  memberships: ReadonlyMap<string, Role>;
}

/** The caller's role in an organization, or null when it has none there. */
export function roleIn(caller: Caller, organizationId: string): Role | null {
  if (caller.keyOrganizationId !== null && caller.keyOrganizationId !== organizationId) return null;
  if (caller.superadmin) return 'owner';
  return caller.memberships.get(organizationId) ?? null;
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
