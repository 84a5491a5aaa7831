import { type Caller, canWrite, roleIn } from '../../core/caller.js';
import { IDENTITY_PROVIDERS, type IdentityProvider } from '../../core/enums.js';
import { appError } from '../../core/errors.js';
import type { Identity } from '../../core/schemas/sign-in.js';
import type { Db } from '../../store/db.js';
import { deleteIdentity, listIdentities, membershipsOf, type StoredIdentity } from '../../store/sign-in/identities.js';

const KNOWN: ReadonlySet<string> = new Set(IDENTITY_PROVIDERS);

function view(row: StoredIdentity): Identity {
  return {
    id: row.id,
    provider: (KNOWN.has(row.provider) ? row.provider : 'SSO_BROKER') as IdentityProvider,
    issuer: row.issuer,
    subject: row.subject,
    ...(row.email === null ? {} : { email: row.email }),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

const notFound = () => appError('auth:identity:not-found');

/**
 * The identities linked to a principal: a principal lists and unlinks its own; an organization's admin or owner
 * may list and unlink those of a member who belongs to that organization alone (a principal of several
 * organizations is no single admin's to change). Unlinking ends the sessions made with that identity.
 */
export class IdentityLinks {
  constructor(private readonly db: Db) {}

  async listOwn(caller: Caller): Promise<Identity[]> {
    return (await listIdentities(this.db, caller.principalId)).map(view);
  }

  async unlinkOwn(caller: Caller, identityId: string): Promise<void> {
    if (!(await deleteIdentity(this.db, caller.principalId, identityId))) throw notFound();
  }

  async listMember(caller: Caller, organizationId: string, principalId: string): Promise<Identity[]> {
    await this.#requireAdminOver(caller, organizationId, principalId, 'read');
    return (await listIdentities(this.db, principalId)).map(view);
  }

  async unlinkMember(caller: Caller, organizationId: string, principalId: string, identityId: string) {
    await this.#requireAdminOver(caller, organizationId, principalId, 'unlink');
    if (!(await deleteIdentity(this.db, principalId, identityId))) throw notFound();
  }

  /**
   * A stranger to the organization, or a principal that is no member of it, is 404 (no existence oracle); a member
   * without admin, or an unlink of a principal that also belongs elsewhere, is 403.
   */
  async #requireAdminOver(caller: Caller, organizationId: string, principalId: string, what: 'read' | 'unlink') {
    const role = roleIn(caller, organizationId);
    // A stranger to the organization learns nothing of its members.
    if (role === null) throw notFound();
    if (!canWrite(caller, organizationId)) throw appError('auth:permission:denied');
    const memberships = await membershipsOf(this.db, principalId);
    const inOrganization = memberships.some((m) => m.organizationId === organizationId);
    if (!inOrganization) throw notFound();
    if (what === 'unlink' && memberships.length > 1) {
      throw appError('auth:permission:denied', {
        description: 'This principal belongs to other organizations too: only the principal may unlink its identities.',
      });
    }
  }
}
