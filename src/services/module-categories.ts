import { randomUUID } from 'node:crypto';
import { canRead, canWrite, visibleOrganizations, type Caller } from '../core/caller.js';
import { appError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import type { ModuleCategoriesTable } from '../store/schema.js';
import type { Selectable } from 'kysely';

export interface ModuleCategory {
  id: string;
  givenId: string;
  name: string;
  sortOrder: number;
  description?: string;
  icon?: string;
  organizationId?: string;
  createdAt: string;
  updatedAt: string;
}

export interface NewModuleCategory {
  givenId: string;
  name: string;
  sortOrder: number;
  description?: string;
  icon?: string;
}

const UNIQUE_VIOLATION = '23505';

export class ModuleCategoryService {
  constructor(private readonly db: Db) {}

  async create(caller: Caller, input: NewModuleCategory): Promise<ModuleCategory> {
    const organizationId = this.targetOrganization(caller);
    if (organizationId !== null && !canWrite(caller, organizationId)) throw appError('auth:permission:denied');
    try {
      const row = await this.db
        .insertInto('module_categories')
        .values({
          id: randomUUID(),
          organization_id: organizationId,
          given_id: input.givenId,
          name: input.name,
          sort_order: input.sortOrder,
          description: input.description ?? null,
          icon: input.icon ?? null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toCategory(row);
    } catch (error) {
      // The unique index decides, so two replicas racing on one givenId cannot both win.
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw appError('module-categories:category:given-id-taken', { metadata: { givenId: input.givenId } });
      }
      throw error;
    }
  }

  /** The caller's organizations' categories and the global ones, by sortOrder then name. */
  async list(caller: Caller): Promise<ModuleCategory[]> {
    const orgs = visibleOrganizations(caller);
    let query = this.db.selectFrom('module_categories').selectAll();
    if (orgs !== null) {
      query = query.where((eb) =>
        orgs.length > 0
          ? eb.or([eb('organization_id', 'is', null), eb('organization_id', 'in', orgs)])
          : eb('organization_id', 'is', null),
      );
    }
    const rows = await query.orderBy('sort_order').orderBy('name').orderBy('id').execute();
    return rows.map(toCategory);
  }

  async get(caller: Caller, id: string): Promise<ModuleCategory> {
    const row = await this.db.selectFrom('module_categories').selectAll().where('id', '=', id).executeTakeFirst();
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
    if (orgs.length === 0) throw appError('auth:permission:denied');
    throw appError('module-categories:organization:ambiguous', {
      description: 'The principal belongs to several organizations: use a key scoped to one of them.',
    });
  }
}

function toCategory(row: Selectable<ModuleCategoriesTable>): ModuleCategory {
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
