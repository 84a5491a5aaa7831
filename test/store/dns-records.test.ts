import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { dnsRecordsAt, replaceDnsRecordSets } from '../../src/store/domains/dns-records.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

describe('record sets of the embedded DNS zone', () => {
  let database: TestDatabase;
  let store: Store;
  const stored = async () =>
    (await dnsRecordsAt(store.db, ['a.example', 'b.example'])).sort((x, y) => (x.name < y.name ? -1 : 1));

  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openStore(database.target);
    await migrate(store);
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });
  beforeEach(async () => {
    await store.db.deleteFrom('dns_records').execute();
    await replaceDnsRecordSets(store.db, [{ name: 'a.example', type: 'TXT', values: ['old'] }]);
  });

  it('applies a batch whole or not at all', async () => {
    const failing = [
      { name: 'a.example', type: 'TXT', values: ['new'] },
      // NOT NULL: the second set fails after the first was written.
      { name: 'b.example', type: 'TXT', values: [null as unknown as string] },
    ];
    await expect(replaceDnsRecordSets(store.db, failing)).rejects.toThrow();
    expect(await stored()).toEqual([{ name: 'a.example', type: 'TXT', value: 'old' }]);
  });

  it("writes in the caller's transaction, and is undone with it", async () => {
    await expect(
      store.db.transaction().execute(async (trx) => {
        await replaceDnsRecordSets(trx, [{ name: 'b.example', type: 'CNAME', values: ['x.example'] }]);
        expect(await dnsRecordsAt(trx, ['b.example'])).toEqual([
          { name: 'b.example', type: 'CNAME', value: 'x.example' },
        ]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await stored()).toEqual([{ name: 'a.example', type: 'TXT', value: 'old' }]);
  });

  it('replaces only the named set: other types at the same name stay', async () => {
    await replaceDnsRecordSets(store.db, [{ name: 'a.example', type: 'CNAME', values: ['y.example'] }]);
    await replaceDnsRecordSets(store.db, [{ name: 'a.example', type: 'TXT', values: ['n1', 'n2'] }]);
    expect((await stored()).map((r) => `${r.type} ${r.value}`).sort()).toEqual(['CNAME y.example', 'TXT n1', 'TXT n2']);
  });
});
