import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openConfiguredStore } from '../../src/runtime.js';
import { DataDirLocked } from '../../src/store/data-dir-lock.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { baseWorld } from '../support/world.js';
import { onPostgres } from '../support/database.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-persist-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('PGlite on disk', () => {
  it('keeps data across a restart and refuses a second opener while open', async () => {
    const config = loadConfig({ BERTH_DATA_DIR: dir });
    const first = await openConfiguredStore(config);
    await loadFixture(first.store.db, baseWorld());
    await expect(openConfiguredStore(config)).rejects.toBeInstanceOf(DataDirLocked);
    await first.close();

    const second = await openConfiguredStore(config);
    const orgs = await second.store.db.selectFrom('organizations').select('id').orderBy('id').execute();
    expect(orgs.map((o) => o.id)).toEqual(['org-a', 'org-b', 'org-empty']);
    await second.close();
  });
});
