// `kill -9` under write load, black-box: every category Berth answered 201 and every event of
// every batch it answered 202 must be there after a restart on the same database. On PGlite the
// restart also has to get past the killed process's data-directory lock and its half-written files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import {
  createCategory,
  dbWorld,
  ingest,
  ingestBody,
  messagesIn,
  serving,
  timed,
  waitUntil,
} from './support/db-world.js';
import { FULL, recordSummary, skipped } from './support/summary.js';

const ROUNDS = FULL ? 5 : 1;
/** Writers of each kind (categories, log batches) running at once. */
const WRITERS = FULL ? 6 : 3;
const EVENTS_PER_BATCH = 20;
/** Load runs this long (ms) before the kill: long enough for the database to be mid-write. */
const LOAD_BEFORE_KILL_MS = () => (FULL ? 1_500 + Math.random() * 2_000 : 800 + Math.random() * 400);
const T0 = Date.UTC(2031, 0, 1);
const database = onPostgres ? 'postgres' : 'pglite';

let berth: Berth;
const acked = { categories: [] as { id: string; givenId: string }[], events: [] as string[] };
let sent = 0;
let batches = 0;

/** Sends writes until the process dies; keeps what was acknowledged. A write without an answer proves nothing either way. */
async function writer(kind: 'category' | 'events', w: number, round: number, dead: () => boolean): Promise<void> {
  for (let i = 0; !dead(); i++) {
    sent++;
    try {
      if (kind === 'category') {
        const res = await createCategory(berth, `k9-r${round}-w${w}-${i}`);
        if (res.status === 201) acked.categories.push({ id: res.body.data.id, givenId: res.body.data.givenId });
        else expect(res.status, res.text).toBe(503);
      } else {
        const b = batches++;
        const body = ingestBody(`k9-r${round}-b${b}`, EVENTS_PER_BATCH, T0 + b * 100);
        const res = await ingest(berth, body);
        if (res.status === 202) acked.events.push(...body.events.map((e) => e.message));
        else expect(res.status, res.text).toBe(503);
      }
    } catch (error) {
      // The connection died with the process: unacknowledged.
      if (!dead()) throw error;
    }
  }
}

async function expectAllAcknowledgedKept(): Promise<void> {
  for (const { id, givenId } of acked.categories) {
    const res = await berth.request('GET', `/module-categories/${id}`, { token: TOKENS.owner });
    expect(res.status, `category ${givenId} (${id}) answered 201 before the kill and is gone`).toBe(200);
    expect(res.body.data.givenId).toBe(givenId);
  }
  const stored = await messagesIn(berth, T0, T0 + batches * 100);
  const lost = acked.events.filter((m) => !stored.has(m));
  expect(lost.length, `events answered 202 before the kill and gone: ${lost.slice(0, 5).join(', ')}`).toBe(0);
}

describe.skipIf(!FULL || skipped('kill9'))(`kill -9 under write load (${database})`, () => {
  beforeAll(async () => {
    // The writers use one key as fast as Berth answers (more than RATE_LIMIT_MAX on PostgreSQL): durability is
    // under test here, not the rate limit.
    berth = await startBerth({ fixture: dbWorld(), env: { RATE_LIMIT_MAX: '0' } });
  });
  afterAll(async () => berth?.close());

  it(
    'keeps every acknowledged category and event across SIGKILL and restart on the same database',
    async () => {
      for (let round = 1; round <= ROUNDS; round++) {
        const before = { categories: acked.categories.length, events: acked.events.length };
        let killed = false;
        const dead = () => killed;
        const load = [
          ...Array.from({ length: WRITERS }, (_, w) => writer('category', w, round, dead)),
          ...Array.from({ length: WRITERS }, (_, w) => writer('events', w, round, dead)),
        ];
        await new Promise((r) => setTimeout(r, LOAD_BEFORE_KILL_MS()));
        killed = true;
        const signal = await berth.stop('SIGKILL');
        expect(signal).toBeNull();
        expect(berth.server.child.signalCode).toBe('SIGKILL');
        await Promise.all(load);

        const restart = await timed(berth.restart());
        const servingAfter = await waitUntil(() => serving(berth), 10_000, 'serving after the restart');
        await expectAllAcknowledgedKept();
        const categories = acked.categories.length - before.categories;
        const events = acked.events.length - before.events;
        // The kill must land under load, or the round proves nothing.
        expect(categories).toBeGreaterThan(0);
        expect(events).toBeGreaterThan(0);
        recordSummary({
          area: 'faults',
          check: `kill -9 under write load, round ${round}/${ROUNDS}`,
          result: `${categories} categories (201) and ${events} events (202) acknowledged this round, all kept (${acked.categories.length} + ${acked.events.length} in all, ${sent} writes sent); restart ${restart.ms} ms, serving ${servingAfter} ms later`,
          ok: true,
        });
      }
    },
    FULL ? 600_000 : 120_000,
  );

  it("takes over the killed process's data-directory lock and serves writes after the restart", async () => {
    const res = await createCategory(berth, 'after-kill9');
    expect(res.status, res.text).toBe(201);
    const back = await berth.request('GET', `/module-categories/${res.body.data.id}`, { token: TOKENS.viewer });
    expect(back.status).toBe(200);
    expect((await berth.request('GET', '/readyz')).status).toBe(200);
  });
});
