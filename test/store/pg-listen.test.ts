// The LISTEN connection the change feed and the tail bus share (src/store/pg-listen.ts): what its callers do not
// show on their own (several channels, the states, a killed connection), on PostgreSQL.
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgListen } from '../../src/store/pg-listen.js';
import { createTestDatabase, onPostgres } from '../support/database.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('PgListen', () => {
  it('refuses a channel that is not a plain identifier', () => {
    expect(
      () =>
        new PgListen(
          {
            url: 'postgres://nowhere.invalid/x',
            channels: ['x; drop table t'],
            applicationName: 'test',
            heartbeatMs: 1_000,
            retry: { baseMs: 100, maxMs: 100, jitter: 'none' },
          },
          { notify: () => undefined, listening: () => undefined },
        ),
    ).toThrow(/plain channel name/);
  });
});

describe.skipIf(!onPostgres)('PgListen on PostgreSQL', () => {
  it('delivers the notifications of each channel, says when it stops and starts listening, and connects again', async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const applicationName = `berth-pg-listen-test ${process.pid}`;
    const seen: string[] = [];
    const listen = new PgListen(
      {
        url: database.url!,
        channels: ['test_one', 'test_two'],
        applicationName,
        heartbeatMs: 1_000,
        retry: { baseMs: 50, maxMs: 200, jitter: 0.2 },
      },
      {
        notify: (channel, payload) => seen.push(`${channel}:${payload}`),
        listening: () => seen.push('listening'),
        lost: () => seen.push('lost'),
      },
    );
    cleanups.push(() => listen.close());
    await until(() => listen.listening, 'listening');
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query(`select pg_notify('test_one', 'a'), pg_notify('test_two', 'b'), pg_notify('test_other', 'c')`);
    // A round trip after the commit returns after its notifications.
    await listen.roundTrip();
    expect(seen).toEqual(['listening', 'test_one:a', 'test_two:b']);

    seen.length = 0;
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1`, [
      applicationName,
    ]);
    await until(() => seen.includes('lost'), 'lost');
    await until(() => listen.listening, 'listening again');
    await admin.query(`select pg_notify('test_two', 'd')`);
    await listen.roundTrip();
    expect(seen).toEqual(['lost', 'listening', 'test_two:d']);

    await listen.close();
    expect(listen.listening).toBe(false);
    await listen.roundTrip();
  });
});
