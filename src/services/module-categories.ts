import { randomUUID } from 'node:crypto';
import { canRead, canWrite, roleIn, visibleOrganizations, type Caller } from '../core/caller.js';
import { appError } from '../core/errors.js';
import type { ModuleCategory, NewModuleCategory } from '../core/schemas/module-categories.js';
import type { Db } from '../store/db.js';
import {
  findModuleCategory,
  insertModuleCategory,
  listModuleCategories,
  type ModuleCategoryRow,
} from '../store/repositories/module-categories.js';

export class ModuleCategoryService {
  constructor(private readonly db: Db) {}

  async create(caller: Caller, input: NewModuleCategory): Promise<ModuleCategory> {
    const organizationId = this.targetOrganization(caller);
    if (organizationId !== null && !canWrite(caller, organizationId)) throw appError('auth:permission:denied');
    const row = await insertModuleCategory(this.db, {
      id: randomUUID(),
      organizationId,
      givenId: input.givenId,
      name: input.name,
      sortOrder: input.sortOrder,
      description: input.description ?? null,
      icon: input.icon ?? null,
    });
    if (row === undefined) {
      throw appError('module-categories:category:given-id-taken', { metadata: { givenId: input.givenId } });
    }
    return toCategory(row);
  }

  /** The caller's organizations' categories and the global ones, by sortOrder then name. */
  async list(caller: Caller): Promise<ModuleCategory[]> {
    const rows = await listModuleCategories(this.db, visibleOrganizations(caller));
    return rows.map(toCategory);
  }

  async get(caller: Caller, id: string): Promise<ModuleCategory> {
    const row = await findModuleCategory(this.db, id);
    if (row === undefined || (row.organization_id !== null && !canRead(caller, row.organization_id))) {
      throw appError('module-categories:category:not-found');
    }
    return toCategory(row);
  }

  /**
   * A category belongs to the key's organization; a superadmin key without
   * one creates a global category; otherwise a principal in exactly one
   * organization creates it there.
   */
  private targetOrganization(caller: Caller): string | null {
    if (caller.keyOrganizationId !== null) return caller.keyOrganizationId;
    if (caller.superadmin) return null;
    const orgs = [...caller.memberships.keys()];
    if (orgs.length === 1) return orgs[0]!;
    if (orgs.length === 0) {
      // A session whose only organizations refuse its sign-in method hears that, rather than a bare 403.
      const [refusing] = caller.notPermitted?.keys() ?? [];
      if (refusing !== undefined) roleIn(caller, refusing);
      throw appError('auth:permission:denied');
    }
    throw appError('module-categories:organization:ambiguous', {
      description: 'The principal belongs to several organizations: use a key scoped to one of them.',
    });
  }
}

function toCategory(row: ModuleCategoryRow): ModuleCategory {
  const out: ModuleCategory = {
    id: row.id,
    givenId: row.given_id,
    name: row.name,
    sortOrder: row.sort_order,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
  if (row.description !== null) out.description = row.description;
  if (row.icon !== null) out.icon = row.icon;
  if (row.organization_id !== null) out.organizationId = row.organization_id;
  return out;
}
