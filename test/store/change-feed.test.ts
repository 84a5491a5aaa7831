import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChangeEvent, type ChangeFeed, openChangeFeed } from '../../src/store/change-feed.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, onPostgres, pgliteTarget, type TestDatabase } from '../support/database.js';
import { startDbProxy } from '../reliability/support/db-proxy.js';

/** Every table a cache reads (authentication, identity providers, tenancy). */
const WATCHED = [
  'api_keys',
  'principals',
  'memberships',
  'organizations',
  'projects',
  'environments',
  'module_instances',
  'cloud_accounts',
  'log_sources',
  'deployment_resources',
  'certificates',
  'domains',
];

interface Opened {
  store: Store;
  feed: ChangeFeed;
  events: ChangeEvent[];
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(database: TestDatabase | { target: { kind: 'pglite'; dataDir: string } }): Promise<Opened> {
  const store = await openStore(database.target);
  await migrate(store);
  const feed = openChangeFeed(store, { retryDelayMs: 100 });
  const events: ChangeEvent[] = [];
  feed.subscribe((event) => events.push(event));
  const opened = {
    store,
    feed,
    events,
    close: async () => {
      await feed.close();
      await store.close();
      if ('drop' in database) await database.drop();
    },
  };
  cleanups.push(opened.close);
  await until(() => feed.listening, 'listening');
  return opened;
}

async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const changedTables = (events: ChangeEvent[]) => events.flatMap((e) => (e.kind === 'changed' ? [e.table] : [])).sort();

const backends = [
  { name: 'PGlite', skip: false, database: createTestDatabaseOn('pglite') },
  { name: 'PostgreSQL', skip: !onPostgres, database: createTestDatabaseOn('postgres') },
];

function createTestDatabaseOn(kind: 'pglite' | 'postgres') {
  return async (): Promise<TestDatabase> =>
    kind === 'pglite' ? { target: pgliteTarget(), drop: async () => undefined } : createTestDatabase();
}

describe.each(backends)('change feed on $name', ({ skip, database }) => {
  it.skipIf(skip)('announces a write to every table a cache reads, once per table and transaction', async () => {
    const { store, feed, events } = await open(await database());
    await store.db.transaction().execute(async (tx) => {
      for (const table of WATCHED) {
        // A statement-level trigger fires even when no row matches: every statement is announced.
        await sql`delete from ${sql.table(table)} where false`.execute(tx);
        await sql`delete from ${sql.table(table)} where false`.execute(tx);
      }
    });
    await feed.settle();
    await until(() => changedTables(events).length >= WATCHED.length, 'told of every table');
    expect(changedTables(events)).toEqual([...WATCHED].sort());
  });

  it.skipIf(skip)('announces nothing for a rolled-back transaction nor for tables no cache reads', async () => {
    const { store, feed, events } = await open(await database());
    await store.db
      .transaction()
      .execute(async (tx) => {
        await sql`delete from api_keys where false`.execute(tx);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await sql`delete from module_categories where false`.execute(store.db);
    await sql`delete from log_events where false`.execute(store.db);
    await sql`delete from organizations where false`.execute(store.db);
    await feed.settle();
    await until(() => changedTables(events).length > 0, 'told of organizations');
    expect(changedTables(events)).toEqual(['organizations']);
  });

  it.skipIf(skip)('has delivered every change committed before settle() when settle() resolves', async () => {
    const { store, feed, events } = await open(await database());
    // Another client commits (on PostgreSQL, another connection of the pool than the listener).
    for (let i = 0; i < 20; i++) {
      events.length = 0;
      await sql`update principals set name = name where false`.execute(store.db);
      await feed.settle();
      expect(changedTables(events)).toEqual(['principals']);
    }
  });
});

describe.skipIf(!onPostgres)('change feed on PostgreSQL, when its connection drops', () => {
  it('says it lost the feed, connects again with backoff, listens again and delivers changes', async () => {
    const { store, feed, events } = await open(await createTestDatabase());
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    cleanups.push(() => admin.end());
    // This test's database has one listener: this feed's.
    const ended = await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = $2`,
      [`berth-change-feed ${process.pid}`, new URL(storeUrl(store)).pathname.slice(1)],
    );
    expect(ended.rows).toEqual([{ pg_terminate_backend: true }]);
    await until(() => events.some((e) => e.kind === 'lost'), 'lost');
    expect(feed.listening).toBe(false);
    await until(() => feed.listening, 'listening again');
    expect(events.map((e) => e.kind).filter((k) => k !== 'changed')).toEqual(['listening', 'lost', 'listening']);
    events.length = 0;
    await sql`delete from memberships where false`.execute(store.db);
    await feed.settle();
    expect(changedTables(events)).toEqual(['memberships']);
  });
});

describe.skipIf(!onPostgres)('change feed on PostgreSQL, when the network to it goes silent', () => {
  it('notices by its heartbeat that it may miss changes, and listens again once the network is back', async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const u = new URL(database.url!);
    const proxy = await startDbProxy({ host: u.hostname, port: Number(u.port || 5432) });
    cleanups.push(() => proxy.close());
    const store = await openStore({ kind: 'postgres', url: proxy.via(database.url!) });
    cleanups.push(() => store.close());
    await migrate(store);
    const feed = openChangeFeed(store, { heartbeatMs: 200, retryDelayMs: 100 });
    cleanups.push(() => feed.close());
    await until(() => feed.listening, 'listening');
    proxy.stall();
    const stalledAt = Date.now();
    await until(() => !feed.listening, 'aware of the silence', 2_000);
    // One heartbeat interval to send, one to time out, and slack for a loaded machine.
    expect(Date.now() - stalledAt).toBeLessThan(1_000);
    await proxy.restore();
    await until(() => feed.listening, 'listening again', 10_000);
  });
});

function storeUrl(store: Store): string {
  if (store.target.kind !== 'postgres') throw new Error('not on PostgreSQL');
  return store.target.url;
}

describe('change feed on PGlite, when the embedded database dies', () => {
  it('says it lost the feed, and listens again on the instance reopened on the same directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-feed-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const { store, feed, events } = await open({ target: { kind: 'pglite', dataDir: dir } });
    await store.supervisor!.injectWalWriteFailure();
    await expect(sql`insert into organizations (id, name) values ('o1', 'O1')`.execute(store.db)).rejects.toThrow();
    expect(feed.listening).toBe(false);
    expect(events.at(-1)?.kind).toBe('lost');
    await until(() => feed.listening, 'listening again', 15_000);
    events.length = 0;
    await sql`insert into organizations (id, name) values ('o2', 'O2')`.execute(store.db);
    expect(changedTables(events)).toEqual(['organizations']);
  });
});
