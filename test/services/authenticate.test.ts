import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/core/tokens.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { AuthenticationService } from '../../src/services/authenticate.js';
import { CacheInvalidation } from '../../src/services/caches/invalidation.js';
import { openChangeFeed } from '../../src/store/change-feed.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { baseWorld, ORG_A, TOKENS } from '../support/world.js';
import { pgliteTarget } from '../support/database.js';

// The embedded database: a write's notification reaches the cache before the writer resumes, so every
// change below is visible to the very next call (PostgreSQL replicas: test/http/cache-invalidation.test.ts).
let store: Store;
let caches: CacheInvalidation;
let cached: AuthenticationService;
let uncached: AuthenticationService;

beforeAll(async () => {
  store = await openStore(pgliteTarget());
  await migrate(store);
  await loadFixture(store.db, baseWorld());
  caches = new CacheInvalidation(openChangeFeed(store));
  cached = new AuthenticationService(store.db, caches, { maxEntries: 1_000, missingTtlMs: 2_000 });
  uncached = new AuthenticationService(store.db, caches, { maxEntries: 0, missingTtlMs: 0 });
  while (!caches.active) await new Promise((resolve) => setTimeout(resolve, 10));
}, 60_000);
afterAll(async () => {
  await caches.close();
  await store.close();
});

const randomToken = () => `berth_k${randomBytes(4).toString('hex')}_${randomBytes(18).toString('base64url')}`;

describe('AuthenticationService with its cache', () => {
  it('answers every token exactly as without the cache, the first time and from memory', async () => {
    const tokens = [...Object.values(TOKENS), randomToken(), '', 'berth_k-owner_wrong-secret'];
    for (const token of tokens) {
      const expected = await uncached.authenticate(token);
      expect(await cached.authenticate(token), token).toEqual(expected);
      expect(await cached.authenticate(token), token).toEqual(expected);
    }
    expect(cached.cacheSize.found).toBeGreaterThan(0);
  });

  it('honours a key expiry to the millisecond, also when the key is served from memory', async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    await sql`insert into api_keys (id, principal_id, token_hash, expires_at)
      values ('k-soon', 'p-viewer', ${hashToken('berth_k-soon_x')}, ${expiresAt})`.execute(store.db);
    const justBefore = new Date(expiresAt.getTime() - 1);
    expect((await cached.authenticate('berth_k-soon_x', justBefore))?.keyId).toBe('k-soon');
    expect((await cached.authenticate('berth_k-soon_x', justBefore))?.keyId).toBe('k-soon');
    expect(await cached.authenticate('berth_k-soon_x', expiresAt)).toBeNull();
    expect((await cached.authenticate('berth_k-soon_x', justBefore))?.keyId).toBe('k-soon');
  });

  it('lets a key work at once although its token was just refused as unknown', async () => {
    const token = randomToken();
    expect(await cached.authenticate(token)).toBeNull();
    expect(cached.cacheSize.missing).toBeGreaterThan(0);
    await sql`insert into api_keys (id, principal_id, token_hash) values ('k-new', 'p-member', ${hashToken(token)})`.execute(
      store.db,
    );
    expect((await cached.authenticate(token))?.keyId).toBe('k-new');
  });

  it('refuses a revoked key and sees a changed membership on the next call', async () => {
    expect((await cached.authenticate(TOKENS.member))?.memberships.get(ORG_A)).toBe('member');
    await sql`update memberships set role = 'admin' where principal_id = 'p-member'`.execute(store.db);
    expect((await cached.authenticate(TOKENS.member))?.memberships.get(ORG_A)).toBe('admin');
    await sql`update api_keys set revoked_at = now() where id = 'k-member'`.execute(store.db);
    expect(await cached.authenticate(TOKENS.member)).toBeNull();
  });

  it('keeps at most its bound of unknown tokens under a flood of 10,000, and still knows the valid ones', async () => {
    const bounded = new AuthenticationService(store.db, caches, { maxEntries: 100, missingTtlMs: 2_000 });
    expect((await bounded.authenticate(TOKENS.viewer))?.principalId).toBe('p-viewer');
    for (let i = 0; i < 10_000; i++) expect(await bounded.authenticate(randomToken())).toBeNull();
    expect(bounded.cacheSize).toEqual({ found: 1, missing: 100 });
    expect((await bounded.authenticate(TOKENS.viewer))?.principalId).toBe('p-viewer');
  }, 120_000);
});
