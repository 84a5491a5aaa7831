import { expect } from 'vitest';
import type { TestResponse } from '../../support/http-request.js';
import { expectError } from '../../support/assertions.js';
import { baseWorld, mergeWorld, TOKENS } from '../../support/world.js';
import type { Berth } from './berth-process.js';

/** The base world plus a local cloud account with one module instance whose log source reads group `in`. */
export function dbWorld(): Record<string, unknown> {
  return mergeWorld(baseWorld(), {
    cloudAccounts: [{ id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' }],
    projects: [{ id: 'p', organizationId: 'org-a', name: 'P' }],
    environments: [{ id: 'e', projectId: 'p', name: 'prod' }],
    moduleInstances: [
      {
        id: 'mi',
        environmentId: 'e',
        name: 'svc',
        logSources: [{ id: 'app', kind: 'ui.logs', cloudAccountId: 'local-a', region: 'eu-west-1', logGroup: 'in' }],
      },
    ],
  });
}

export const categoryBody = (givenId: string) => ({ data: { givenId, name: `Category ${givenId}`, sortOrder: 1 } });

export const createCategory = (berth: Berth, givenId: string, token: string = TOKENS.owner) =>
  berth.request('POST', '/module-categories', { token, body: categoryBody(givenId) });

/** A batch of events whose messages carry `marker` and their index, at `timestamp + i`. */
export const ingestBody = (marker: string, count: number, timestamp: number, logStream = 's') => ({
  accountId: 'local-a',
  region: 'eu-west-1',
  logGroup: 'in',
  logStream,
  events: Array.from({ length: count }, (_, i) => ({ message: `${marker} #${i}`, timestamp: timestamp + i })),
});

export const ingest = (berth: Berth, body: unknown) =>
  berth.request('POST', '/cloud/logs/local/events', { token: TOKENS.admin, body });

export const logQuery = (berth: Berth, startMs: number, endMs: number) =>
  berth.request('POST', '/cloud/logs/logs-insights', {
    token: TOKENS.viewer,
    body: {
      startTime: new Date(startMs).toISOString(),
      endTime: new Date(endMs).toISOString(),
      moduleInstanceIds: ['mi'],
      limit: 10_000,
    },
  });

/** Every message logged in [startMs, endMs], following `nextEndTimeMs` page by page. */
export async function messagesIn(berth: Berth, startMs: number, endMs: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let end = endMs; end > 0; ) {
    const res = await logQuery(berth, startMs, end);
    expect(res.status, res.text).toBe(200);
    expect(res.body.partial).toBe(false);
    for (const row of res.body.rows as { message: string }[]) seen.add(row.message);
    end = res.body.nextEndTimeMs as number;
  }
  return seen;
}

/** Host names, addresses, ports, socket errors: what an outage answer must not show a non-superadmin. */
const INTERNAL_DETAIL =
  /\d+\.\d+\.\d+\.\d+|localhost|:\d{2,5}\b|\bE[A-Z]{4,}\b|postgres|pglite|wasm|timeout exceeded|terminated/i;

/** The answer to a request the database could not serve: 503 `internal:server:unavailable`, no internals. */
export function expectUnavailable(res: TestResponse, { superadmin = false } = {}): void {
  expectError(res, 503, 'internal:server:unavailable');
  const body = res.body as Record<string, unknown>;
  if (superadmin) {
    expect(body.isInternal).toBe(true);
  } else {
    expect(body.isInternal).toBeUndefined();
    expect(body.metadata).toBeUndefined();
    expect(String(body.description ?? '')).not.toMatch(INTERNAL_DETAIL);
  }
}

/** A request's answer and how long it took. */
export async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: Math.round(performance.now() - started) };
}

/** Polls `check` until it returns true; resolves with the time it took, rejects past `timeoutMs`. */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    let ok = false;
    try {
      ok = await check();
    } catch {
      ok = false;
    }
    const ms = Math.round(performance.now() - started);
    if (ok) return ms;
    if (ms > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether Berth serves again: ready, and an authenticated read answers 200. */
export async function serving(berth: Berth): Promise<boolean> {
  const ready = await berth.request('GET', '/readyz');
  if (ready.status !== 200) return false;
  return (await berth.request('GET', '/module-categories', { token: TOKENS.viewer })).status === 200;
}
