import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { StoreTarget } from '../../src/store/db.js';

/** The environment variable that hands the template's path to the test files (test/support/pglite-template.ts). */
export const PGLITE_TEMPLATE_ENV = 'BERTH_TEST_PGLITE_TEMPLATE';

/** PostgreSQL when TEST_DATABASE_URL is set (CI), else PGlite in memory. */
export const onPostgres = process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '';

export interface TestDatabase {
  target: StoreTarget;
  url?: string;
  drop(): Promise<void>;
}

/**
 * A new in-memory PGlite, started from the suite's template of a fresh cluster when the global setup made one
 * (test/support/pglite-template.ts): the same empty database, several times faster to open.
 */
export function pgliteTarget(): StoreTarget {
  const template = process.env[PGLITE_TEMPLATE_ENV];
  return template === undefined || template === '' ? { kind: 'pglite' } : { kind: 'pglite', template };
}

/** A fresh, empty database for one test app: its own PostgreSQL database, or a new PGlite. */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (!onPostgres) return { target: pgliteTarget(), drop: async () => undefined };
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  const name = `berth_t_${randomBytes(6).toString('hex')}`;
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    target: { kind: 'postgres', url: url.toString() },
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
