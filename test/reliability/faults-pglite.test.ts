// The embedded database dying inside a running Berth, black-box. With BERTH_FAULT_INJECTION=1,
// SIGUSR2 makes PGlite's next WAL write fail with EIO; PostgreSQL PANICs, as on a failing disk, and
// the instance is dead. Berth must answer 503, report not ready, reopen the same directory itself
// within 5 s, and keep every write it acknowledged.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import {
  createCategory,
  dbWorld,
  expectUnavailable,
  ingest,
  ingestBody,
  messagesIn,
  serving,
  timed,
  waitUntil,
} from './support/db-world.js';
import { FULL, recordSummary } from './support/summary.js';

/** The bound: Berth reopens the embedded database itself within 5 s. */
const REOPEN_BOUND_MS = 5_000;
const ARMED = 'fault injection: the next WAL write fails';

let berth: Berth;
let pid: number;
let deaths = 0;
/**
 * Lines Berth wrote, counted as they come: its kept output is the last 256 KiB only, and while the database
 * reopens Berth answers 503 at full speed, logging more than that.
 */
const logged = { armed: 0, died: 0 };

function countLines(child: ChildProcess): void {
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.includes(ARMED)) logged.armed++;
      if (line.includes('the embedded database died')) logged.died++;
    }
  });
}

function expectAlive(): void {
  const child = berth.server.child;
  expect(
    child.exitCode === null && child.signalCode === null,
    `Berth exited:\n${berth.server.output().slice(-4000)}`,
  ).toBe(true);
  expect(child.pid).toBe(pid);
}

/** Arms the fault and waits until Berth says it is armed (the signal is handled on its event loop). */
async function armDeath(): Promise<void> {
  const before = logged.armed;
  process.kill(pid, 'SIGUSR2');
  await waitUntil(async () => logged.armed > before, 5_000, 'fault armed');
  deaths++;
}

/** How many deaths Berth has logged. */
const diedCount = () => logged.died;

/** Categories and events Berth acknowledged, to look for after the reopen. */
const acknowledged = { categories: [] as { id: string; givenId: string }[], events: new Set<string>() };
const T0 = Date.UTC(2030, 0, 1);
let batch = 0;

async function writeAcknowledged(tag: string): Promise<{ created: number; rejected: number }> {
  let created = 0;
  let rejected = 0;
  const c = await createCategory(berth, `${tag}-${acknowledged.categories.length}`);
  if (c.status === 201) {
    acknowledged.categories.push({ id: c.body.data.id, givenId: c.body.data.givenId });
    created++;
  } else {
    expectUnavailable(c);
    rejected++;
  }
  const b = batch++;
  const body = ingestBody(`${tag}-batch-${b}`, 10, T0 + b * 100);
  const e = await ingest(berth, body);
  if (e.status === 202) {
    expect(e.body).toEqual({ data: { accepted: 10 } });
    body.events.forEach((ev) => acknowledged.events.add(ev.message));
    created++;
  } else {
    expectUnavailable(e);
    rejected++;
  }
  return { created, rejected };
}

async function expectAcknowledgedKept(): Promise<void> {
  for (const { id, givenId } of acknowledged.categories) {
    const res = await berth.request('GET', `/module-categories/${id}`, { token: TOKENS.owner });
    expect(res.status, `category ${givenId} (${id}) answered 201 and is gone`).toBe(200);
    expect(res.body.data.givenId).toBe(givenId);
  }
  const stored = await messagesIn(berth, T0, T0 + batch * 100);
  const lost = [...acknowledged.events].filter((m) => !stored.has(m));
  expect(lost, 'events answered 202 and gone').toEqual([]);
}

describe.skipIf(onPostgres)('PGlite dying in a running Berth', () => {
  beforeAll(async () => {
    berth = await startBerth({ fixture: dbWorld(), database: 'pglite', env: { BERTH_FAULT_INJECTION: '1' } });
    pid = berth.server.child.pid!;
    countLines(berth.server.child);
    for (let i = 0; i < 5; i++) await writeAcknowledged('before');
    expect(acknowledged.categories.length).toBe(5);
  });
  afterAll(async () => berth?.close());
  afterEach(() => expectAlive());

  it(
    'answers 503 to the request that kills it and while it reopens, reports not ready, and serves again within 5 s in the same process',
    async () => {
      const rounds = FULL ? 5 : 1;
      for (let round = 0; round < rounds; round++) {
        await armDeath();
        const dying = await timed(createCategory(berth, `dying-${round}`));
        expectUnavailable(dying.value);
        // Right after the death the database is being reopened: not ready, and requests get 503 at once.
        const [ready, read] = await Promise.all([
          timed(berth.request('GET', '/readyz')),
          timed(berth.request('GET', '/module-categories', { token: TOKENS.viewer })),
        ]);
        expectUnavailable(ready.value);
        expectUnavailable(read.value);
        expect(Math.max(ready.ms, read.ms)).toBeLessThan(1_000);
        const back = await waitUntil(() => serving(berth), REOPEN_BOUND_MS, 'serving after the embedded database died');
        expectAlive();
        // The statement that died was never committed: the same givenId is free.
        const retry = await createCategory(berth, `dying-${round}`);
        expect(retry.status, retry.text).toBe(201);
        acknowledged.categories.push({ id: retry.body.data.id, givenId: retry.body.data.givenId });
        await expectAcknowledgedKept();
        recordSummary({
          area: 'faults',
          check: `PGlite killed (WAL write EIO → PANIC), round ${round + 1}`,
          result: `503 in ${dying.ms} ms, /readyz 503 in ${ready.ms} ms, serving again after ${back} ms (bound ${REOPEN_BOUND_MS}), same process, ${acknowledged.categories.length} categories and ${acknowledged.events.size} events kept`,
          ok: true,
        });
      }
    },
    FULL ? 300_000 : 60_000,
  );

  it('keeps the data-directory lock across the reopen', async () => {
    await armDeath();
    expectUnavailable(await createCategory(berth, 'lock-check'));
    await waitUntil(() => serving(berth), REOPEN_BOUND_MS, 'serving again');
    const lock = JSON.parse(readFileSync(join(berth.dataDir!, 'berth.lock'), 'utf8')) as { pid: number; url?: string };
    expect(lock.pid).toBe(pid);
    expect(lock.url).toBe(berth.url);
  });

  it(
    'loses no acknowledged write when the database dies under concurrent writes',
    async () => {
      const writers = FULL ? 6 : 3;
      const deathsHere = FULL ? 4 : 1;
      let stop = false;
      const totals = { created: 0, rejected: 0 };
      const work = Array.from({ length: writers }, async (_, w) => {
        while (!stop) {
          const r = await writeAcknowledged(`load-${w}`);
          totals.created += r.created;
          totals.rejected += r.rejected;
        }
      });
      for (let d = 0; d < deathsHere; d++) {
        await new Promise((r) => setTimeout(r, 500));
        await armDeath();
        await waitUntil(async () => diedCount() >= deaths, 5_000, 'the database died under load');
        await waitUntil(() => serving(berth), REOPEN_BOUND_MS, 'serving again under load');
      }
      await new Promise((r) => setTimeout(r, 300));
      stop = true;
      await Promise.all(work);
      expect(totals.rejected).toBeGreaterThan(0);
      await expectAcknowledgedKept();
      recordSummary({
        area: 'faults',
        check: `PGlite killed ${deathsHere}× under ${writers} concurrent writers`,
        result: `${totals.created} writes acknowledged and all kept, ${totals.rejected} answered 503, ${deaths} deaths in all, no restart`,
        ok: true,
      });
    },
    FULL ? 300_000 : 60_000,
  );
});
