import { afterAll, beforeAll, expect, it } from 'vitest';
import { baseWorld, TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';

let berth: Berth;
beforeAll(async () => {
  berth = await startBerth({ fixture: baseWorld() });
});
afterAll(async () => berth?.close());

it('a Berth process started by the suite answers over HTTP', async () => {
  const res = await berth.request('GET', '/organizations/org-a/permitted-identity-providers', { token: TOKENS.owner });
  expect(res.status).toBe(200);
  expect((await berth.request('GET', '/healthz')).status).toBe(200);
});
