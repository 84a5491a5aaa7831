import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { storeTarget } from '../../src/runtime.js';

describe('the database a configuration opens', () => {
  const url = 'postgres://postgres@127.0.0.1:5432/test';

  it('hands DB_POOL_SIZE and DB_STATEMENT_TIMEOUT_MS to the PostgreSQL pool (10 connections by default)', () => {
    expect(storeTarget(loadConfig({ DATABASE_URL: url }))).toMatchObject({ kind: 'postgres', url, poolSize: 10 });
    expect(storeTarget(loadConfig({ DATABASE_URL: url, DB_POOL_SIZE: '40', DB_STATEMENT_TIMEOUT_MS: '5000' }))).toEqual(
      { kind: 'postgres', url, poolSize: 40, statementTimeoutMs: 5000 },
    );
  });

  it('refuses a pool size outside 1–1000', () => {
    for (const size of ['0', '1001', 'many']) {
      expect(() => loadConfig({ DATABASE_URL: url, DB_POOL_SIZE: size })).toThrow(ConfigError);
    }
  });
});
