// One answer and one timing for an unknown email and a wrong password (issue 23), measured the way a client outside
// sees it: `berth serve` in a child process, password sign-in offered, requests over HTTP one at a time. Their
// figures need the machine to themselves, so they run in the full reliability suite only (one file at a time);
// `npm test` checks the answers and that both paths hash (test/http/sign-in-password.test.ts).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseWorld } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { FULL, recordSummary } from './support/summary.js';

const PAIRS = 50;
const LIMIT_MS = 20;
const EMAIL = 'owner@a.example';

let berth: Berth;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

describe.skipIf(!FULL)('password sign-in timing', () => {
  beforeAll(async () => {
    const world = baseWorld() as { principals: Record<string, unknown>[] };
    const owner = world.principals.find((p) => p.id === 'p-owner')!;
    owner.email = EMAIL;
    owner.password = 'the right password 0123';
    const signIn = join(mkdtempSync(join(tmpdir(), 'berth-timing-')), 'sign-in.yaml');
    writeFileSync(signIn, 'passwordSignIn: true\n');
    berth = await startBerth({
      fixture: world,
      // One client address asks every time: the limits would otherwise turn the measurement into 429s.
      env: { SIGN_IN_CONFIG: signIn, SIGN_IN_MAX_PER_ADDRESS: '100000', PASSWORD_FAILURES_PER_ACCOUNT: '100000' },
    });
  }, 120_000);
  afterAll(async () => {
    await berth?.close();
  });

  it(`answers an unknown email like a wrong password, in the same time (p50 within ${LIMIT_MS} ms)`, async () => {
    const attempt = async (email: string) => {
      const started = performance.now();
      const res = await berth.request('POST', '/auth/password', { body: { email, password: 'not the password' } });
      return { ms: performance.now() - started, status: res.status, body: res.body as Record<string, unknown> };
    };
    // Warm both paths once (statements, the thread pool).
    await attempt(EMAIL);
    await attempt('warm-up@a.example');
    const bodies = new Set<string>();
    /** One round: PAIRS of each, in alternating order; how far apart their medians are. */
    const round = async () => {
      const wrong: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < PAIRS; i += 1) {
        const order = i % 2 === 0 ? [EMAIL, `nobody-${i}@a.example`] : [`nobody-${i}@a.example`, EMAIL];
        for (const email of order) {
          const { ms, status, body } = await attempt(email);
          expect(status).toBe(401);
          const { requestId: _id, ...rest } = body;
          bodies.add(JSON.stringify(rest));
          (email === EMAIL ? wrong : unknown).push(ms);
        }
      }
      const difference = Math.abs(median(wrong) - median(unknown));
      return {
        difference,
        text: `wrong password p50 ${median(wrong).toFixed(1)} ms, unknown email p50 ${median(unknown).toFixed(1)} ms (${PAIRS} each): ${difference.toFixed(1)} ms apart`,
      };
    };
    // A hash is ~0.15 s of one core: a burst of other work on the machine moves one side's median by more than the
    // bound. A second round is measured when the first falls short; a real difference (a path that skips the hash
    // answers in a few milliseconds) falls short in both.
    const rounds = [await round()];
    if (rounds[0]!.difference >= LIMIT_MS) rounds.push(await round());
    const best = Math.min(...rounds.map((r) => r.difference));
    const result = rounds.map((r) => r.text).join('; then ');
    recordSummary({
      area: 'sign-in',
      check: 'unknown email against wrong password: one body, one timing',
      result,
      ok: best < LIMIT_MS && bodies.size === 1,
    });
    expect(bodies.size, [...bodies].join('\n')).toBe(1);
    expect(best, result).toBeLessThan(LIMIT_MS);
  }, 240_000);
});
