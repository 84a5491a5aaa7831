// The store's insert of local events (`insertLocalEvents`: one unnest statement a chunk), on PGlite and PostgreSQL:
// what goes in comes back byte for byte, ids already stored are skipped, and the rows keep the order they were given
// in.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/db.js';
import { insertLocalEvents, type LocalEventInput } from '../../src/store/log-ingest/events.js';
import { openSeededStore } from '../support/seeded-store.js';
import { baseWorld, mergeWorld, ORG_A } from '../support/world.js';

const ACCOUNT = 'acc-insert';
const REGION = 'eu-west-1';
const T = Date.UTC(2024, 0, 15, 12, 0, 0);

let store: Store;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ store, close } = await openSeededStore(
    mergeWorld(baseWorld(), {
      cloudAccounts: [{ id: ACCOUNT, organizationId: ORG_A, provider: 'local', region: REGION }],
    }),
  ));
}, 120_000);

afterAll(async () => {
  await close?.();
});

interface Stored {
  log_group: string;
  log_stream: string;
  event_id: string;
  timestamp: string;
  ingestion_time: string;
  message: string;
  level: string;
  json: unknown;
}

async function stored(group: string): Promise<Stored[]> {
  const result = await sql<Stored>`select log_group, log_stream, event_id, timestamp::text, ingestion_time::text,
      message, level, json from log_events where cloud_account_id = ${ACCOUNT} and log_group = ${group}
      order by seq`.execute(store.db);
  return result.rows;
}

const event = (group: string, i: number, message: string, extra: Partial<LocalEventInput> = {}): LocalEventInput => ({
  cloudAccountId: ACCOUNT,
  region: REGION,
  logGroup: group,
  logStream: 'web',
  timestamp: T + i,
  message,
  eventId: `e-${String(i).padStart(6, '0')}`,
  ...extra,
});

describe('insertLocalEvents', () => {
  it('stores every character of a message as given, NUL as U+FFFD', async () => {
    const messages = [
      'plain INFO line',
      'tab\there, newline\nthere, return\rthere',
      'back\\slash, \\N, \\t and \\\\ as text',
      '\\N',
      '',
      ' leading and trailing spaces ',
      'ERROR émoji 🚀 and 中文 and \u2028 separators',
      'nul \u0000 inside',
      '{"level":"warn","msg":"tab\\there","n":1e400,"nested":{"a":[1,2,"\\\\"]}}',
      '{"not json": ',
    ];
    const events = messages.map((m, i) =>
      event('/insert/chars', i, m, {
        logStream: i === 3 ? 'stream\twith\ttabs\\and\nbreaks' : 'web',
        ingestionTime: T + 1_000 + i,
      }),
    );
    expect(await insertLocalEvents(store.db, events)).toBe(messages.length);
    const rows = await stored('/insert/chars');
    expect(rows.map((r) => r.message)).toEqual(messages.map((m) => m.replace(/\u0000/g, '\ufffd')));
    expect(rows.map((r) => r.event_id)).toEqual(events.map((e) => e.eventId));
    expect(rows[3]!.log_stream).toBe('stream\twith\ttabs\\and\nbreaks');
    expect(rows.map((r) => [r.timestamp, r.ingestion_time])).toEqual(
      events.map((e) => [String(e.timestamp), String(e.ingestionTime)]),
    );
    // Level and JSON are derived as before: the JSON message is stored parsed, the broken one is not.
    expect(rows[6]!.level).toBe('ERROR');
    expect(rows[8]!.level).toBe('WARN');
    expect(rows[8]!.json).toMatchObject({ level: 'warn', msg: 'tab\there', nested: { a: [1, 2, '\\'] } });
    expect(rows[9]!.json).toBeNull();
    expect(rows[0]!.json).toBeNull();
  });

  it('skips ids already stored, within a batch of several chunks and again later, keeping the given order', async () => {
    const count = 12_345;
    const events = Array.from({ length: count }, (_, i) => event('/insert/many', i, `INFO row ${i}`));
    expect(await insertLocalEvents(store.db, events)).toBe(count);
    // The same ids again, with new ones among them: only the new ones are written.
    const again = [...events.slice(0, 100), event('/insert/many', count, 'INFO the new one'), ...events.slice(-50)];
    expect(await insertLocalEvents(store.db, again)).toBe(1);
    const rows = await stored('/insert/many');
    expect(rows).toHaveLength(count + 1);
    expect(rows.map((r) => r.event_id)).toEqual([
      ...events.map((e) => e.eventId),
      `e-${String(count).padStart(6, '0')}`,
    ]);
  });

  it("writes inside a caller's transaction, and nothing of it when that transaction rolls back", async () => {
    const events = Array.from({ length: 20 }, (_, i) => event('/insert/txn', i, `INFO txn ${i}`));
    await store.db
      .transaction()
      .execute(async (trx) => {
        expect(await insertLocalEvents(trx, events)).toBe(20);
        throw new Error('roll back');
      })
      .catch((error: Error) => expect(error.message).toBe('roll back'));
    expect(await stored('/insert/txn')).toEqual([]);
    await store.db.transaction().execute(async (trx) => {
      expect(await insertLocalEvents(trx, events.slice(0, 5))).toBe(5);
      expect(await insertLocalEvents(trx, events)).toBe(15);
    });
    expect((await stored('/insert/txn')).map((r) => r.message)).toEqual(events.map((e) => e.message));
  });
});
