// Tenant isolation (issue 9 §4): every route × every kind of caller, and another organization's objects
// answering exactly like nonexistent ones — observed over HTTP against `berth serve`, checked against the
// rules of docs/design.md#identity-tokens-and-permissions, and against docs/authorization.md (written by
// scripts/authorization-doc.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { openSse, type SseReader } from '../support/log-stream-wire.js';
import { ROOT } from '../support/process.js';
import { TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { GARBAGE_EVENT_ID } from './support/isolation-cases.js';
import { send, streamedMessages, type Outcome } from './support/isolation-http.js';
import { AUTHENTICATED, credentialOf, prescribed, streamPath, type CallerKind } from './support/isolation-matrix.js';
import { observe, type Observed } from './support/isolation-observe.js';
import { DOCUMENT_PATH, MATRIX_ENV } from './support/isolation-render.js';
import {
  CROSSED,
  CROSSED_ROWS,
  SESSION_ROWS,
  IDS,
  isolationWorld,
  MARKER,
  REGION,
  WINDOW,
  type Org,
} from './support/isolation-world.js';
import { FULL, recordSummary } from './support/summary.js';

let berth: Berth;
let observed: Observed;
const started = Date.now();

beforeAll(async () => {
  berth = await startBerth({ fixture: isolationWorld(), sql: [...CROSSED_ROWS, ...SESSION_ROWS], env: MATRIX_ENV });
  observed = await observe(berth);
}, 120_000);
afterAll(async () => {
  if (observed !== undefined) {
    const differences = observed.cases.filter((c) => c.difference !== undefined).length;
    const departures = observed.matrix.filter((r) => r.cell !== prescribed(r.row, r.caller)).length;
    recordSummary({
      area: 'isolation',
      check: 'route × caller cells, checked against docs/design.md and docs/authorization.md',
      result: `${observed.matrix.length} (${departures} departures)`,
      ok: departures === 0,
    });
    recordSummary({
      area: 'isolation',
      check: "other org's object vs nonexistent object (request pairs)",
      result: `${observed.cases.length} (${differences} differences)`,
      ok: differences === 0,
    });
    recordSummary({
      area: 'isolation',
      check: `matrix run, Berth start included (${FULL ? 'full' : 'npm test'})`,
      result: `${((Date.now() - started) / 1000).toFixed(1)} s`,
      ok: true,
    });
  }
  await berth?.close();
});

const owner = `Bearer ${TOKENS.owner}`;

/** The organizations whose data a matrix caller may see. */
function sees(caller: CallerKind): Org[] {
  return (['A', 'B'] as const).filter((org) => caller.roles?.[org] !== undefined);
}

function leaks(o: Outcome, visible: Org[]): string[] {
  return (['A', 'B'] as const)
    .filter((org) => !visible.includes(org) && o.text.includes(MARKER[org]))
    .map((org) => `org ${org}'s data`);
}

describe('the authorization matrix', () => {
  it('answers every route and every kind of caller as the permission rules prescribe', () => {
    const departures = observed.matrix
      .filter((r) => r.cell !== prescribed(r.row, r.caller))
      .map(
        (r) =>
          `${r.row.route} ${r.row.variant} as ${r.caller.label}: ${r.cell}, prescribed ${prescribed(r.row, r.caller)}`,
      );
    expect(departures).toEqual([]);
  });

  it("answers every refusal with the spec's error object", () => {
    const refusals = observed.matrix.filter((r) => r.outcome.status >= 400);
    expect(refusals.length).toBeGreaterThan(100);
    for (const { outcome } of refusals) expectError(outcome, outcome.status, outcome.body?.code);
  });

  it('gives no caller data of an organization its key does not reach', () => {
    const found = observed.matrix.flatMap((r) =>
      leaks(r.outcome, sees(r.caller)).map((l) => `${r.row.route} ${r.row.variant} as ${r.caller.label}: ${l}`),
    );
    expect(found).toEqual([]);
  });

  it("lists, to a key scoped to org B, org B's categories but never org A's, whatever the principal's memberships", async () => {
    for (const caller of AUTHENTICATED.filter((c) => c.roles?.A === undefined && c.roles?.B !== undefined)) {
      const list = await send(berth, credentialOf(caller), { method: 'GET', path: '/module-categories' });
      const ids = (list.body.data as { id: string }[]).map((c) => c.id);
      expect(ids).toContain(observed.minted.category.B);
      expect(ids).not.toContain(observed.minted.category.A);
    }
  });

  it("streams and queries org A's logs without org B's events, though both use the same group and stream names", () => {
    const stream = observed.matrix.find((r) => r.row.key === 'stream' && r.caller.key === 'owner')!;
    const messages = streamedMessages(stream.outcome);
    expect(messages).toHaveLength(4);
    expect(messages.every((m) => m.includes(MARKER.A))).toBe(true);
    const query = observed.matrix.find((r) => r.row.key === 'query-environment' && r.caller.key === 'viewer')!;
    expect(query.outcome.body.rows.map((r: { message: string }) => r.message).sort()).toEqual(messages.slice().sort());
  });
});

describe("another organization's object", () => {
  it('answers exactly like an object that does not exist, for every kind of object and every caller', () => {
    const differences = observed.cases
      .filter((c) => c.difference !== undefined)
      .map((c) => `${c.kind.key} as ${c.viewpoint.label}: ${c.difference}`);
    expect(differences).toEqual([]);
    // Each pair is a refusal, but for stream positions, which are not objects.
    for (const c of observed.cases.filter((x) => x.kind.key !== 'stream-position')) {
      expect(c.foreign.status, `${c.kind.key} as ${c.viewpoint.label}`).toBeGreaterThanOrEqual(400);
      expectError(c.foreign, c.foreign.status, c.foreign.body.code);
      expectError(c.missing, c.missing.status, c.missing.body.code);
    }
  });

  it('carries no data of the other organization in any answer', () => {
    const found = observed.cases.flatMap((c) =>
      [c.foreign, c.missing].flatMap((o) =>
        leaks(o, [c.viewpoint.home]).map((l) => `${c.kind.key} as ${c.viewpoint.label}: ${l}`),
      ),
    );
    expect(found).toEqual([]);
  });

  it('resumes a stream from a garbage Last-Event-ID at the beginning, as without one', async () => {
    const plain = await send(berth, owner, { method: 'GET', path: streamPath(IDS.A.account) });
    const garbage = await send(berth, owner, {
      method: 'GET',
      path: streamPath(IDS.A.account),
      headers: { 'last-event-id': GARBAGE_EVENT_ID },
    });
    expect(streamedMessages(garbage)).toEqual(streamedMessages(plain));
    expect(streamedMessages(plain)).toHaveLength(4);
  });

  it("resumes org A's stream from a position of org B's stream in org A's events only", async () => {
    // Org B's events are older than org A's: from B's position, A's stream holds all of its own events.
    const resumed = await send(berth, owner, {
      method: 'GET',
      path: streamPath(IDS.A.account),
      headers: { 'last-event-id': observed.minted.streamId.B },
    });
    expect(resumed.status).toBe(200);
    expect(streamedMessages(resumed)).toHaveLength(4);
    expect(streamedMessages(resumed).every((m) => m.includes(MARKER.A))).toBe(true);
  });
});

describe('the live tail', () => {
  const GROUP = '/live/shared';
  const params = (accountId: string) => ({ accountId, logGroups: GROUP, logStreamPrefix: 'live/', tail: true });
  const ingest = async (token: string, accountId: string, message: string) => {
    const res = await berth.request('POST', '/cloud/logs/local/events', {
      token,
      body: { accountId, region: REGION, logGroup: GROUP, logStream: 'live/1', events: [{ message }] },
    });
    expect(res.status).toBe(202);
  };
  /** Reads a tail until `last` arrives; every event read on the way is returned. */
  const until = async (reader: SseReader, last: string) => {
    const seen: string[] = [];
    while (!seen.includes(last)) {
      const events = await reader.events(1, 15_000);
      if (events.length === 0) break;
      seen.push(...events.map((e) => e.message));
    }
    return seen;
  };

  it("delivers org A's events only, while org B writes into a group and stream of the same name, also resumed from org B's position", async () => {
    const readers: SseReader[] = [];
    try {
      const b = await openSse(berth.url, TOKENS.otherAdmin, params(IDS.B.account));
      const a = await openSse(berth.url, TOKENS.owner, params(IDS.A.account));
      readers.push(a, b);
      await ingest(TOKENS.otherAdmin, IDS.B.account, `${MARKER.B} live 1`);
      await ingest(TOKENS.owner, IDS.A.account, `${MARKER.A} live 1`);
      expect(await until(a, `${MARKER.A} live 1`)).toEqual([`${MARKER.A} live 1`]);
      expect(await until(b, `${MARKER.B} live 1`)).toEqual([`${MARKER.B} live 1`]);

      // A tail position is a place in the whole log, not a reference to B's stream: resumed on A's account it reads A's events.
      const position = b.messages().at(-1)!.id!;
      const resumed = await openSse(berth.url, TOKENS.owner, params(IDS.A.account), { 'last-event-id': position });
      readers.push(resumed);
      expect(resumed.res.status).toBe(200);
      await ingest(TOKENS.otherAdmin, IDS.B.account, `${MARKER.B} live 2`);
      await ingest(TOKENS.owner, IDS.A.account, `${MARKER.A} live 2`);
      const got = await until(resumed, `${MARKER.A} live 2`);
      expect(got).toContain(`${MARKER.A} live 2`);
      expect(got.filter((m) => !m.includes(MARKER.A))).toEqual([]);
    } finally {
      readers.forEach((r) => r.close());
    }
  });
});

describe("org A's objects wired to org B's cloud account by a seed", () => {
  const query = (selector: Record<string, unknown>) =>
    send(berth, owner, { method: 'POST', path: '/cloud/logs/logs-insights', body: { ...WINDOW, ...selector } });

  it("never read org B's logs through a module instance's log source", async () => {
    const byEnvironment = await query({ environmentId: CROSSED.environment });
    expect(byEnvironment.status).toBe(200);
    expect(byEnvironment.body.rows).toEqual([]);
    const byInstance = await query({ moduleInstanceIds: [CROSSED.moduleInstance] });
    expect(byInstance.body.rows).toEqual([]);
    const byKey = await query({ logSourceKeys: [`${CROSSED.moduleInstance}::${CROSSED.logSource}`] });
    expectError(byKey, 404, 'logs:log-source:not-found');
    expect(byKey.text).not.toContain(MARKER.B);
  });

  it("never read org B's logs through a deployment resource", async () => {
    const res = await query({ deploymentResourceId: CROSSED.deploymentResource });
    expectError(res, 404, 'logs:account:not-found');
    expect(res.text).not.toContain(MARKER.B);
  });
});

describe('docs/authorization.md', () => {
  it('is what Berth answers (regenerate with `npx tsx scripts/authorization-doc.ts`)', () => {
    const written = readFileSync(join(ROOT, DOCUMENT_PATH), 'utf8');
    expect(observed.document).toBe(written);
  });
});
