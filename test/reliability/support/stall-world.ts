// The world of the stall tests (issue 20, "No tenant can stall another"): tenant A, the attacker's organization, with
// a viewer key (the attacks) and an admin key (seeding and the trickle of the tails attack), 200,000 events in one log
// group spread over ten stream prefixes, and one 250 KB message of `a`/`b` characters in a stream of its own; tenant B,
// another organization, with a member key and a small log group. Deterministic from its sizes and the clock it is
// given. Written against the API as documented (README "Limits"), never against Berth's code.
import { expect } from 'vitest';
import type { Berth } from './berth-process.js';
import { LIMITS } from './noisy-heavy.js';
import { ADDRESS, clientAgent, exchange } from './noisy-http.js';
import { noisyMessage, REGION, seedEvents } from './noisy-world.js';

export { REGION };

/** Ten prefixes: A's seeded events are spread over `svc-0/…` to `svc-9/…`; the tails attack opens one tail on each. */
export const PREFIXES = Array.from({ length: 10 }, (_, i) => `svc-${i}/`);
/** The stream holding the one big message, and nothing else. */
export const HUGE_STREAM = 'huge/ab';
/** The big message's length: 250,000 characters (README "Limits": a message ≤ 256 KiB). */
export const HUGE_LENGTH = 250_000;

export interface StallTenant {
  organizationId: string;
  accountId: string;
  environmentId: string;
  moduleInstanceId: string;
  logGroup: string;
}

export interface StallWorld {
  fixture: Record<string, unknown>;
  a: StallTenant & { viewerToken: string; adminToken: string };
  b: StallTenant & { token: string };
  /** The window every seeded event lies in (epoch ms); the trickle and the big message are written at "now", after it. */
  window: { startMs: number; endMs: number };
}

const token = (keyId: string, secret: string) => `berth_${keyId}_${secret}-secret-0000000000`;

function tenant(name: 'a' | 'b'): StallTenant {
  return {
    organizationId: `stall-${name}`,
    accountId: `acct-stall-${name}`,
    environmentId: `env-stall-${name}`,
    moduleInstanceId: `mi-stall-${name}`,
    logGroup: `/stall/${name}/${name === 'a' ? 'big' : 'small'}`,
  };
}

/** B's events are in the fixture (few); A's many are ingested through the API (`seedA`). */
export function stallWorld(eventsB: number, now: number): StallWorld {
  const a = {
    ...tenant('a'),
    viewerToken: token('k-stall-a-viewer', 'stall-a-viewer'),
    adminToken: token('k-stall-a-admin', 'stall-a-admin'),
  };
  const b = { ...tenant('b'), token: token('k-stall-b', 'stall-b') };
  const window = { startMs: now - 2 * 3_600_000, endMs: now - 1_000 };
  const span = window.endMs - window.startMs;
  const fixture = {
    organizations: [
      { id: a.organizationId, name: 'Attacker A', permittedIdentityProviders: ['EMAIL_PASSWORD'] },
      { id: b.organizationId, name: 'Bystander B', permittedIdentityProviders: ['SSO_BROKER', 'SOCIAL_1'] },
    ],
    principals: [
      {
        id: 'p-stall-a-viewer',
        name: 'A viewer (the attacker)',
        memberships: [{ organizationId: a.organizationId, role: 'viewer' }],
        apiKeys: [{ id: 'k-stall-a-viewer', token: a.viewerToken, organizationId: a.organizationId }],
      },
      {
        id: 'p-stall-a-admin',
        name: 'A admin (seeds and trickles)',
        memberships: [{ organizationId: a.organizationId, role: 'admin' }],
        apiKeys: [{ id: 'k-stall-a-admin', token: a.adminToken, organizationId: a.organizationId }],
      },
      {
        id: 'p-stall-b',
        name: 'B member',
        memberships: [{ organizationId: b.organizationId, role: 'member' }],
        apiKeys: [{ id: 'k-stall-b', token: b.token, organizationId: b.organizationId }],
      },
    ],
    cloudAccounts: [a, b].map((t) => ({
      id: t.accountId,
      organizationId: t.organizationId,
      provider: 'local',
      region: REGION,
    })),
    projects: [a, b].map((t) => ({ id: `prj-${t.organizationId}`, organizationId: t.organizationId, name: 'Shop' })),
    environments: [a, b].map((t) => ({ id: t.environmentId, projectId: `prj-${t.organizationId}`, name: 'prod' })),
    moduleInstances: [a, b].map((t) => ({
      id: t.moduleInstanceId,
      environmentId: t.environmentId,
      name: 'web',
      logSources: [{ id: 'app', kind: 'ui.logs', cloudAccountId: t.accountId, region: REGION, logGroup: t.logGroup }],
    })),
    logEvents: Array.from({ length: eventsB }, (_, i) => ({
      cloudAccountId: b.accountId,
      region: REGION,
      logGroup: b.logGroup,
      logStream: `app/web-${i % 4}`,
      timestamp: window.startMs + Math.floor((i * span) / eventsB),
      message: noisyMessage(i),
    })),
  };
  return { fixture, a, b, window };
}

/**
 * The big message: `c` then 249,999 pseudo-random `a`/`b` characters. It holds every literal the attack regexes
 * require (so no prefilter in the database can skip it) and matches none of them (no `c` after a run of `a`/`b`), so
 * RE2 has to try the whole message: the answer is no rows.
 */
export function hugeMessage(): string {
  const chars = ['c'];
  let x = 12_345;
  for (let i = 1; i < HUGE_LENGTH; i++) {
    x = (Math.imul(x, 1_103_515_245) + 12_345) & 0x7fffffff;
    chars.push((x >> 16) & 1 ? 'a' : 'b');
  }
  return chars.join('');
}

export interface SeedReport {
  events: number;
  seconds: number;
}

/**
 * A's `events` seeded events through the ingest API at its limits (10,000 events and ≤ 1 MiB a request, the
 * noisy-neighbour test's way; two requests at a time), spread over the ten prefixes, then the big message in its own
 * stream.
 */
export async function seedA(berth: Berth, world: StallWorld, events: number): Promise<SeedReport> {
  const agent = clientAgent(ADDRESS.noisy, 2);
  const started = performance.now();
  const batches = Math.ceil(events / LIMITS.ingestEvents);
  const post = async (body: string) => {
    const r = await exchange(berth.url, '/cloud/logs/local/events', {
      method: 'POST',
      token: world.a.adminToken,
      body,
      agent,
      timeoutMs: 120_000,
    });
    expect(r.status, `seeding A: ${r.body.slice(0, 300)}`).toBe(202);
    return (JSON.parse(r.body) as { data: { accepted: number } }).data.accepted;
  };
  let accepted = 0;
  let next = 0;
  await Promise.all(
    [0, 1].map(async () => {
      for (let batch = next++; batch < batches; batch = next++) {
        const from = batch * LIMITS.ingestEvents;
        const count = Math.min(LIMITS.ingestEvents, events - from);
        const body = JSON.stringify({
          accountId: world.a.accountId,
          region: REGION,
          logGroup: world.a.logGroup,
          logStream: `${PREFIXES[batch % PREFIXES.length]}seed-${batch}`,
          events: seedEvents(from, count, events, world.window),
        });
        expect(Buffer.byteLength(body)).toBeLessThanOrEqual(LIMITS.bodyBytes);
        const got = await post(body);
        accepted += got;
      }
    }),
  );
  const huge = JSON.stringify({
    accountId: world.a.accountId,
    region: REGION,
    logGroup: world.a.logGroup,
    logStream: HUGE_STREAM,
    events: [{ message: hugeMessage(), timestamp: world.window.endMs }],
  });
  const got = await post(huge);
  accepted += got;
  agent.destroy();
  expect(accepted).toBe(events + 1);
  return { events: accepted, seconds: (performance.now() - started) / 1000 };
}
