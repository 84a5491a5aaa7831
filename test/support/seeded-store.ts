import { loadFixture } from '../../src/fixtures/load.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/** A store on a fresh test database (PGlite, or PostgreSQL with TEST_DATABASE_URL), migrated, with `world` loaded. */
export async function openSeededStore(
  world: Record<string, unknown>,
): Promise<{ store: Store; close(): Promise<void> }> {
  const database: TestDatabase = await createTestDatabase();
  const store = await openStore(database.target);
  const close = async () => {
    await store.close();
    await database.drop();
  };
  try {
    await migrate(store);
    await loadFixture(store.db, world);
  } catch (error) {
    // A world the loader refuses fails the suite's setup without leaving its database behind.
    await close();
    throw error;
  }
  return { store, close };
}
