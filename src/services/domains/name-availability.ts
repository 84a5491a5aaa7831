import { canRead, visibleOrganizations, type Caller } from '../../core/caller.js';
import { type NormalizedDomainName, normalizeDomainName, parentCandidates } from '../../core/domain-name.js';
import { baseName } from '../../core/dns-records.js';
import { appError } from '../../core/errors.js';
import type { Db } from '../../store/db.js';
import { type DomainHolder, heldOutside, holdersOfName } from '../../store/domains/domains.js';
import type { Tenancy } from '../../store/tenancy.js';
import type { ConflictOwner } from '../../core/enums.js';
import type { NameAvailability, NameAvailabilityQuery } from '../../core/schemas/domains.js';

/** Who asks: the organizations counted as "same" and, when given, the instance counted as "same". */
interface Requester {
  /** `null`: every organization (a superadmin key without organization and without instance). */
  organizations: ReadonlySet<string> | null;
  moduleInstanceId: string | null;
}

/** EXACT holders beyond this many are not needed to tell the nearest owner. */
const MAX_EXACT_HOLDERS = 50;
const OWNER_RANK: Record<ConflictOwner, number> = {
  SAME_MODULE_INSTANCE: 0,
  SAME_ORGANIZATION: 1,
  OTHER_ORGANIZATION: 2,
  SERVICE: 3,
};

/**
 * Whether a domain name is free for the caller (docs/design.md#6-name-availability). Every check is
 * one indexed lookup (by name, or by parent name), never a scan. The answer names a conflict by
 * its type and a relative owner only: never an id or a name the caller did not send.
 */
export class NameAvailabilityService {
  private readonly reserved: string[];

  constructor(
    private readonly db: Db,
    private readonly tenancy: Tenancy,
    reservedZones: string[],
  ) {
    this.reserved = reservedZones
      .map((zone) => zone.trim().toLowerCase().replace(/\.$/, '').replace(/^\*\./, ''))
      .filter((z) => z !== '');
  }

  async check(caller: Caller, query: NameAvailabilityQuery): Promise<NameAvailability> {
    const requester = await this.requester(caller, query.moduleInstanceId);
    const normalized = normalizeDomainName(query.name);
    const { name, wildcard } = normalized;
    const conflict =
      this.reservedConflict(name) ??
      (await this.exactConflict(name, requester)) ??
      (wildcard ? await this.subdomainConflict(name, requester) : await this.wildcardConflict(normalized, requester));
    return conflict === undefined ? { available: true } : { available: false, conflict };
  }

  private async requester(caller: Caller, moduleInstanceId: string | undefined): Promise<Requester> {
    if (moduleInstanceId === undefined) {
      const orgs = visibleOrganizations(caller);
      return { organizations: orgs === null ? null : new Set(orgs), moduleInstanceId: null };
    }
    const organizationId = await this.tenancy.moduleInstance(moduleInstanceId);
    if (organizationId === undefined || !canRead(caller, organizationId))
      throw appError('domains:module-instance:not-found');
    return { organizations: new Set([organizationId]), moduleInstanceId };
  }

  /** The platform's zones, and every name under them, wildcards included. */
  private reservedConflict(name: string): NameAvailability['conflict'] {
    const base = baseName(name);
    return this.reserved.some((zone) => base === zone || base.endsWith(`.${zone}`))
      ? { owner: 'SERVICE', type: 'RESERVED' }
      : undefined;
  }

  /** The same name held anywhere; with several holders the one nearest the requester is named. */
  private async exactConflict(name: string, requester: Requester): Promise<NameAvailability['conflict']> {
    const holders = await holdersOfName(this.db, name, MAX_EXACT_HOLDERS);
    const owners = holders.map((h) => ownerOf(h, requester)).sort((a, b) => OWNER_RANK[a] - OWNER_RANK[b]);
    return owners[0] === undefined ? undefined : { owner: owners[0], type: 'EXACT' };
  }

  /**
   * Another organization's `*.parent` covers the name (one-label rule). A wildcard of the
   * requester's own organization does not conflict: nesting inside one organization is what the
   * domain list shows as `parent`.
   */
  private async wildcardConflict(
    name: NormalizedDomainName,
    requester: Requester,
  ): Promise<NameAvailability['conflict']> {
    if (requester.organizations === null) return undefined;
    const [candidate] = parentCandidates(name);
    if (candidate === undefined) return undefined;
    const held = await heldOutside(this.db, { name: candidate }, [...requester.organizations]);
    return held ? { owner: 'OTHER_ORGANIZATION', type: 'WILDCARD' } : undefined;
  }

  /** A wildcard `*.x` asked over names one label under x that another organization holds. */
  private async subdomainConflict(name: string, requester: Requester): Promise<NameAvailability['conflict']> {
    if (requester.organizations === null) return undefined;
    const held = await heldOutside(this.db, { parentName: baseName(name), except: name }, [...requester.organizations]);
    return held ? { owner: 'OTHER_ORGANIZATION', type: 'SUBDOMAIN' } : undefined;
  }
}

function ownerOf(holder: DomainHolder, requester: Requester): ConflictOwner {
  if (requester.moduleInstanceId !== null && holder.module_instance_id === requester.moduleInstanceId)
    return 'SAME_MODULE_INSTANCE';
  if (requester.organizations === null || requester.organizations.has(holder.organization_id))
    return 'SAME_ORGANIZATION';
  return 'OTHER_ORGANIZATION';
}
