/**
 * `api`: req/s of `GET /organizations/{id}/permitted-identity-providers` with a valid token at
 * LOG_LEVEL=info, on PGlite and PostgreSQL, against (a) Berth's own `/healthz` in the same process
 * (target ≥ 0.8) and (b) a bare node:http server making the same header check and sending the same
 * bytes (reported); and Berth's `/healthz` against a bare node:http server answering the same status, headers and
 * bytes (target ≥ 0.6: the per-request floor of the framework and Berth's hooks); and, reported, a bare Fastify app
 * (its logger at info, no plugin, no hook) answering the same bytes, against the same bare server: the part of
 * that floor that is the framework's own. Load: autocannon, 50
 * connections, from its own process; median of three runs.
 */
import { startBareServer } from './lib/bare-server.js';
import { createDatabase, type DatabaseKind, databaseKinds, seedFixture, startBerth } from './lib/berth.js';
import { type Contender, interleaved } from './lib/compare.js';
import { runLoad } from './lib/load.js';
import { atLeast, type BenchResult, progress, reported, writeResult } from './lib/runner-result.js';
import { CONNECTIONS } from './lib/scale.js';
import type { RunFigures } from './lib/stats.js';

const NAME = 'api';
const ORG = 'org-bench';
const TOKEN = 'berth_k-bench_api-bench-secret-0123456789';
const PATH = `/organizations/${ORG}/permitted-identity-providers`;
const AUTH = { authorization: `Bearer ${TOKEN}` };

const FIXTURE = {
  organizations: [
    { id: ORG, name: 'Bench', permittedIdentityProviders: ['SSO_BROKER', 'EMAIL_PASSWORD', 'CODE_HOST_2'] },
    { id: 'org-other', name: 'Other', permittedIdentityProviders: ['SOCIAL_1'] },
  ],
  principals: [
    {
      id: 'p-bench',
      name: 'Bench owner',
      memberships: [
        { organizationId: ORG, role: 'owner' },
        { organizationId: 'org-other', role: 'viewer' },
      ],
      apiKeys: [{ id: 'k-bench', token: TOKEN }],
    },
  ],
};

/** Response headers that belong to the connection or the moment, not to the answer. */
const HOP_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

const load =
  (url: string, path: string, headers: Record<string, string> = {}) =>
  (durationS: number): Promise<RunFigures> =>
    runLoad({ url, path, headers, connections: CONNECTIONS, durationS });

async function measure(kind: DatabaseKind): Promise<BenchResult['rows']> {
  const db = await createDatabase(NAME, kind);
  try {
    await seedFixture(db, FIXTURE);
    const berth = await startBerth(db, { LOG_LEVEL: 'info' });
    try {
      const answer = await fetch(`${berth.url}${PATH}`, { headers: AUTH });
      const body = await answer.text();
      if (answer.status !== 200) throw new Error(`${PATH} answered ${answer.status}: ${body}`);
      const headers: Record<string, string> = {};
      answer.headers.forEach((value, key) => {
        if (!HOP_HEADERS.has(key)) headers[key] = value;
      });
      const bare = await startBareServer({ path: PATH, token: TOKEN, status: 200, headers, body });
      const healthAnswer = await fetch(`${berth.url}/healthz`);
      const healthHeaders: Record<string, string> = {};
      healthAnswer.headers.forEach((value, key) => {
        if (!HOP_HEADERS.has(key)) healthHeaders[key] = value;
      });
      const healthBody = await healthAnswer.text();
      const bareHealth = await startBareServer({
        path: '/healthz',
        status: healthAnswer.status,
        headers: healthHeaders,
        body: healthBody,
      });
      const fastifyHealth = await startBareServer({
        path: '/healthz',
        status: healthAnswer.status,
        headers: healthHeaders,
        body: healthBody,
        framework: 'fastify',
      });
      try {
        progress(NAME, `${kind}: Berth pid ${berth.pid} at ${berth.url}, bare server at ${bare.url}`);
        const contenders: Contender[] = [
          { label: 'Berth identity providers', run: load(berth.url, PATH, AUTH) },
          { label: 'Berth /healthz', run: load(berth.url, '/healthz') },
          { label: 'bare node:http', run: load(bare.url, PATH, AUTH) },
          { label: 'bare node:http /healthz', run: load(bareHealth.url, '/healthz') },
          { label: 'bare Fastify /healthz', run: load(fastifyHealth.url, '/healthz') },
        ];
        const [api, health, floor, healthFloor, fastifyFloor] = await interleaved(`${NAME} ${kind}`, contenders);
        const figure = (label: string, f: RunFigures) => ({ label, value: f.rate, median: f.p50, p99: f.p99 });
        const row = {
          ...figure('GET permitted-identity-providers (valid token, LOG_LEVEL=info)', api!),
          database: kind,
          unit: 'req/s' as const,
        };
        return [
          atLeast({ ...row, baseline: figure('Berth /healthz, same process', health!) }, 0.8),
          reported({ ...row, baseline: figure('bare node:http, same header check and bytes', floor!) }),
          atLeast(
            {
              ...figure('GET /healthz (LOG_LEVEL=info)', health!),
              database: kind,
              unit: 'req/s' as const,
              baseline: figure('bare node:http, same status, headers and bytes', healthFloor!),
            },
            0.6,
          ),
          // The framework's own share of the floor: Fastify and its logger alone, against the same bare server.
          reported({
            ...figure('bare Fastify /healthz (pino at info, no plugin, no hook)', fastifyFloor!),
            database: kind,
            unit: 'req/s' as const,
            baseline: figure('bare node:http, same status, headers and bytes', healthFloor!),
          }),
        ];
      } finally {
        await bare.close();
        await bareHealth.close();
        await fastifyHealth.close();
      }
    } finally {
      await berth.stop();
    }
  } finally {
    await db.close();
  }
}

const skipped: string[] = [];
const rows: BenchResult['rows'] = [];
for (const kind of await databaseKinds(skipped)) rows.push(...(await measure(kind)));
writeResult({ name: NAME, rows, skipped });
