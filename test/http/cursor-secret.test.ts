// Issue 20: no cursor key in the source. With CURSOR_SECRET unset, the first replica to start generates one into the
// database and every replica (and restart) shares it; CURSOR_SECRET, when set, wins.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Config, loadConfig } from '../../src/config.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { openStore, type StoreTarget } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { storedCursorSecret } from '../../src/store/repositories/cursor-secret.js';
import { startTestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../support/database.js';
import { httpRequest } from '../support/http-request.js';
import { baseWorld, ORG_A, TOKENS } from '../support/world.js';

const dirs: string[] = [];
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const d of databases) await d.drop();
});

/** A Berth server as `berth serve` starts it (the secret is loaded before it listens), with the test world. */
function serve(settings: Partial<Config>): Promise<RunningServer> {
  const config = loadConfig({}, { LOG_LEVEL: 'silent', PORT: 0, ...settings });
  return startServer(config, {
    prepare: async (opened) => {
      await loadFixture(opened.store.db, baseWorld());
    },
  });
}

/** The first page (one key) of org A's keys on a server, and its nextCursor. */
async function firstCursor(server: RunningServer): Promise<string> {
  const res = await httpRequest(server.url, 'GET', `/organizations/${ORG_A}/api-keys?limit=1`, { token: TOKENS.owner });
  expect(res.status).toBe(200);
  expect(typeof res.body.meta.nextCursor).toBe('string');
  return res.body.meta.nextCursor;
}

const secondPage = (server: RunningServer, cursor: string) =>
  httpRequest(server.url, 'GET', `/organizations/${ORG_A}/api-keys?limit=1&cursor=${encodeURIComponent(cursor)}`, {
    token: TOKENS.owner,
  });

/** The stored secret rows, read apart from any server (on PGlite, once the server using the directory is gone). */
async function storedRows(target: StoreTarget): Promise<{ secret: string }[]> {
  const store = await openStore(target);
  try {
    return await store.db.selectFrom('cursor_secret').select('secret').execute();
  } finally {
    await store.close();
  }
}

describe('the cursor secret on PGlite on disk', { timeout: 300_000 }, () => {
  it('is generated on first start, kept in the data directory, and the same after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-cursor-secret-'));
    dirs.push(dir);
    const target: StoreTarget = { kind: 'pglite', dataDir: dir };
    const first = await serve({ BERTH_DATA_DIR: dir });
    let secret: string;
    let cursor: string;
    try {
      secret = await first.services.cursorSecret.get();
      // 32 random bytes, base64url.
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      cursor = await firstCursor(first);
    } finally {
      await first.shutdown();
    }
    // Another server on the same directory (PGlite: one process at a time) opens the first one's cursors.
    const second = await serve({ BERTH_DATA_DIR: dir });
    try {
      expect(await second.services.cursorSecret.get()).toBe(secret);
      expect((await secondPage(second, cursor)).status).toBe(200);
    } finally {
      await second.shutdown();
    }
    // CURSOR_SECRET wins over the stored one: those cursors no longer open, and the stored row is left alone.
    const configured = await serve({ BERTH_DATA_DIR: dir, CURSOR_SECRET: 'configured-secret-of-this-cluster' });
    try {
      expect(await configured.services.cursorSecret.get()).toBe('configured-secret-of-this-cluster');
      expectError(await secondPage(configured, cursor), 400, 'api-keys:cursor:invalid');
      expect((await secondPage(configured, await firstCursor(configured))).status).toBe(200);
    } finally {
      await configured.shutdown();
    }
    // Kept in the directory: the one row, as generated.
    expect(await storedRows(target)).toEqual([{ secret }]);
  });
});

describe('the cursor secret with CURSOR_SECRET set', () => {
  it('is the configured one, and none is generated', async () => {
    const t = await startTestApp({ config: { CURSOR_SECRET: 'configured' } });
    try {
      expect(await t.services.cursorSecret.get()).toBe('configured');
      expect(await t.store.db.selectFrom('cursor_secret').selectAll().execute()).toEqual([]);
    } finally {
      await t.close();
    }
  });
});

describe.runIf(onPostgres)('the cursor secret on PostgreSQL', { timeout: 120_000 }, () => {
  it('is one for every replica, however many start at once', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const stores = await Promise.all([1, 2, 3].map(() => openStore(database.target)));
    try {
      await migrate(stores[0]!);
      const candidates = ['a', 'b', 'c'].map((c) => c.repeat(43));
      const agreed = await Promise.all(stores.map((s, i) => storedCursorSecret(s.db, candidates[i]!)));
      expect(new Set(agreed).size).toBe(1);
      expect(candidates).toContain(agreed[0]);
      // Later offers change nothing.
      expect(await storedCursorSecret(stores[1]!.db, 'd'.repeat(43))).toBe(agreed[0]);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it('is shared by two servers on one database, and CURSOR_SECRET wins', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const [one, two] = await Promise.all([
      serve({ DATABASE_URL: database.url }),
      serve({ DATABASE_URL: database.url }),
    ]);
    try {
      const rows = await storedRows(database.target);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(await one.services.cursorSecret.get()).toBe(rows[0]!.secret);
      expect(await two.services.cursorSecret.get()).toBe(rows[0]!.secret);
      // A cursor of one replica opens on the other, both ways.
      expect((await secondPage(two, await firstCursor(one))).status).toBe(200);
      expect((await secondPage(one, await firstCursor(two))).status).toBe(200);

      const configured = await serve({
        DATABASE_URL: database.url,
        CURSOR_SECRET: 'configured-secret-of-this-cluster',
      });
      try {
        expect(await configured.services.cursorSecret.get()).toBe('configured-secret-of-this-cluster');
        expectError(await secondPage(configured, await firstCursor(one)), 400, 'api-keys:cursor:invalid');
        expectError(await secondPage(one, await firstCursor(configured)), 400, 'api-keys:cursor:invalid');
        expect(await storedRows(database.target)).toEqual(rows);
      } finally {
        await configured.shutdown();
      }
    } finally {
      await one.shutdown();
      await two.shutdown();
    }
  });
});
