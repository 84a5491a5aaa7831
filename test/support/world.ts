/**
 * The standard test world: two organizations and a caller of every kind.
 * Tokens are plain here (fixtures store them hashed).
 */
export const TOKENS = {
  owner: 'berth_k-owner_owner-secret-000000000000',
  admin: 'berth_k-admin_admin-secret-000000000000',
  member: 'berth_k-member_member-secret-0000000000',
  viewer: 'berth_k-viewer_viewer-secret-0000000000',
  otherAdmin: 'berth_k-other_other-secret-000000000000',
  superadmin: 'berth_k-root_root-secret-00000000000000',
  expired: 'berth_k-expired_expired-secret-00000000',
  revoked: 'berth_k-revoked_revoked-secret-00000000',
  multiOrg: 'berth_k-multi_multi-secret-000000000000',
  ownerUnscoped: 'berth_k-owner2_owner-unscoped-0000000000',
} as const;

export const ORG_A = 'org-a';
export const ORG_B = 'org-b';

export function baseWorld(): Record<string, unknown> {
  return {
    organizations: [
      { id: ORG_A, name: 'Org A', permittedIdentityProviders: ['SSO_BROKER', 'EMAIL_PASSWORD', 'CODE_HOST_2'] },
      { id: ORG_B, name: 'Org B', permittedIdentityProviders: ['SOCIAL_1'] },
      { id: 'org-empty', name: 'Org with no providers', permittedIdentityProviders: [] },
    ],
    principals: [
      {
        id: 'p-owner',
        name: 'Owner',
        memberships: [{ organizationId: ORG_A, role: 'owner' }],
        apiKeys: [
          { id: 'k-owner', token: TOKENS.owner, organizationId: ORG_A },
          { id: 'k-owner2', token: TOKENS.ownerUnscoped },
        ],
      },
      {
        id: 'p-admin',
        name: 'Admin',
        memberships: [{ organizationId: ORG_A, role: 'admin' }],
        apiKeys: [{ id: 'k-admin', token: TOKENS.admin, organizationId: ORG_A }],
      },
      {
        id: 'p-member',
        name: 'Member',
        memberships: [{ organizationId: ORG_A, role: 'member' }],
        apiKeys: [{ id: 'k-member', token: TOKENS.member }],
      },
      {
        id: 'p-viewer',
        name: 'Viewer',
        memberships: [{ organizationId: ORG_A, role: 'viewer' }],
        apiKeys: [{ id: 'k-viewer', token: TOKENS.viewer, organizationId: ORG_A }],
      },
      {
        id: 'p-other',
        name: 'Other org admin',
        memberships: [{ organizationId: ORG_B, role: 'admin' }],
        apiKeys: [{ id: 'k-other', token: TOKENS.otherAdmin, organizationId: ORG_B }],
      },
      { id: 'p-root', name: 'Root', superadmin: true, apiKeys: [{ id: 'k-root', token: TOKENS.superadmin }] },
      {
        id: 'p-stale',
        name: 'Stale keys',
        memberships: [{ organizationId: ORG_A, role: 'owner' }],
        apiKeys: [
          { id: 'k-expired', token: TOKENS.expired, expiresAt: '2020-01-01T00:00:00Z' },
          { id: 'k-revoked', token: TOKENS.revoked, revokedAt: '2021-01-01T00:00:00Z' },
        ],
      },
      {
        id: 'p-multi',
        name: 'In two orgs',
        memberships: [
          { organizationId: ORG_A, role: 'admin' },
          { organizationId: ORG_B, role: 'admin' },
        ],
        apiKeys: [{ id: 'k-multi', token: TOKENS.multiOrg }],
      },
    ],
  };
}

/** Merges fixture sections (arrays are concatenated). */
export function mergeWorld(...parts: Record<string, unknown>[]): Record<string, unknown> {
  const out: Record<string, unknown[]> = {};
  for (const part of parts) {
    for (const [k, v] of Object.entries(part)) out[k] = [...(out[k] ?? []), ...(v as unknown[])];
  }
  return out;
}
