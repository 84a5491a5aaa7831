import { canRead, type Caller } from '../core/caller.js';
import { appError } from '../core/errors.js';
import type { Db } from '../store/db.js';

/** The spec's identity providers, in the order the API lists them. */
export const IDENTITY_PROVIDERS = [
  'EMAIL_PASSWORD',
  'CODE_HOST_1',
  'CODE_HOST_2',
  'SOCIAL_1',
  'WORKFORCE_1',
  'SSO_BROKER',
] as const;
export type IdentityProvider = (typeof IDENTITY_PROVIDERS)[number];

const ORDER = new Map<string, number>(IDENTITY_PROVIDERS.map((p, i) => [p, i]));

export class OrganizationService {
  constructor(private readonly db: Db) {}

  /**
   * An unknown organization and one the caller is not a member of answer the
   * same 403: the endpoint declares no 404, and existence must not leak.
   */
  async permittedIdentityProviders(caller: Caller, organizationId: string): Promise<IdentityProvider[]> {
    if (!canRead(caller, organizationId)) throw appError('auth:permission:denied');
    const org = await this.db
      .selectFrom('organizations')
      .select('permitted_identity_providers')
      .where('id', '=', organizationId)
      .executeTakeFirst();
    if (org === undefined) throw appError('auth:permission:denied');
    const unique = new Set(org.permitted_identity_providers.filter((p): p is IdentityProvider => ORDER.has(p)));
    return [...unique].sort((a, b) => ORDER.get(a)! - ORDER.get(b)!);
  }
}
