import type { Selectable } from 'kysely';
import type { Executor } from '../db.js';
import type { ModuleCategoriesTable } from '../schema.js';

export type ModuleCategoryRow = Selectable<ModuleCategoriesTable>;

export interface NewModuleCategoryRow {
  id: string;
  organizationId: string | null;
  givenId: string;
  name: string;
  sortOrder: number;
  description: string | null;
  icon: string | null;
}

const UNIQUE_VIOLATION = '23505';

/**
 * Inserts a category; undefined when its givenId is already taken in its organization (or among the
 * global ones). The unique index decides, so two replicas racing on one givenId cannot both win.
 */
export async function insertModuleCategory(
  db: Executor,
  category: NewModuleCategoryRow,
): Promise<ModuleCategoryRow | undefined> {
  try {
    return await db
      .insertInto('module_categories')
      .values({
        id: category.id,
        organization_id: category.organizationId,
        given_id: category.givenId,
        name: category.name,
        sort_order: category.sortOrder,
        description: category.description,
        icon: category.icon,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (error) {
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) return undefined;
    throw error;
  }
}

/**
 * The global categories and those of these organizations (`null`: of every organization), by
 * sortOrder, then name, then id.
 */
export async function listModuleCategories(
  db: Executor,
  organizationIds: readonly string[] | null,
): Promise<ModuleCategoryRow[]> {
  let query = db.selectFrom('module_categories').selectAll();
  if (organizationIds !== null) {
    const orgs = [...organizationIds];
    query = query.where((eb) =>
      orgs.length > 0
        ? eb.or([eb('organization_id', 'is', null), eb('organization_id', 'in', orgs)])
        : eb('organization_id', 'is', null),
    );
  }
  return query.orderBy('sort_order').orderBy('name').orderBy('id').execute();
}

export async function findModuleCategory(db: Executor, id: string): Promise<ModuleCategoryRow | undefined> {
  return db.selectFrom('module_categories').selectAll().where('id', '=', id).executeTakeFirst();
}
