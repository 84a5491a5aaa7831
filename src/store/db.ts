import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import type { Tables } from './schema.js';

export type Db = Kysely<Tables>;
export type Executor = Kysely<Tables> | Transaction<Tables>;

/** Where the data lives: a PostgreSQL server, PGlite on disk, or PGlite in memory. */
export type StoreTarget = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir?: string };

export interface Store {
  db: Db;
  target: StoreTarget;
  /** Runs a multi-statement SQL script (migrations) in one transaction: all of it or none. */
  execScript(text: string): Promise<void>;
  close(): Promise<void>;
}

const INT8_OID = 20;

/** Opens the database; bigint columns come back as numbers (epoch ms fits in 2^53). */
export async function openStore(target: StoreTarget): Promise<Store> {
  if (target.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: target.url,
      max: 10,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client losing its server must not crash the process.
    pool.on('error', () => undefined);
    const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      target,
      execScript: async (text) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(text);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => db.destroy(),
    };
  }
  if (target.dataDir !== undefined) mkdirSync(target.dataDir, { recursive: true });
  const lite = await PGlite.create(target.dataDir, {
    parsers: { [INT8_OID]: (v: string) => Number(v) },
  });
  const db = new Kysely<Tables>({ dialect: new PGliteDialect(lite) });
  return {
    db,
    target,
    execScript: async (text) => {
      await lite.exec(text);
    },
    close: () => db.destroy(),
  };
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
