import { afterAll, beforeAll, expect, it } from 'vitest';
import { startBerth, type Berth } from './support/berth-process.js';
import { errorCode, errorObjectProblem } from './support/noisy-heavy.js';
import { ADDRESS, clientAgent, exchange, type Exchange } from './support/noisy-http.js';
import { openStream, type SseStream } from './support/stall-sse.js';
import { limitsWorld, REGION, type LimitsOrg, type LimitsWorld } from './support/stall-limits-world.js';
import { recordSummary } from './support/summary.js';

/**
 * Issue 20, attack 5: limits across organizations, black-box. A principal who is an Acme owner and a Globex viewer
 * uses a Globex-scoped key (minted for it by a Globex admin through `POST /organizations/{id}/api-keys`) to open ten
 * live tails (the per-principal stream limit) and to send 2,050 `GET /me` (past the 2,000 requests per 10 s): the
 * Globex key is refused with 429 and Retry-After (an eleventh stream, and `/me` past the limit), while the same
 * principal's Acme key still opens a stream while the ten Globex tails are open (before the flood: the stream limit
 * alone), and right after the flood, inside the Globex key's exhausted window, still gets `GET /me`, its log query and
 * its stream answered (200, Acme's own data): a principal's limits in one organization never spend its share in
 * another. Berth runs as users run it (`berth seed`,
 * `berth serve`, default configuration but LOG_LEVEL=warn), on PGlite or on PostgreSQL with TEST_DATABASE_URL.
 */
const FLOOD = 2_050;
/** Connections of the flood: enough that 2,050 requests fit the 10 s window on a busy two-core machine. */
const FLOOD_CONNECTIONS = 16;
const TAILS = 10;

let berth: Berth;
let world: LimitsWorld;

beforeAll(async () => {
  world = limitsWorld(50, Date.now());
  berth = await startBerth({ fixture: world.fixture });
}, 120_000);

afterAll(async () => {
  await berth?.close();
});

function streamPath(o: LimitsOrg, extra: Record<string, string>): string {
  return `/cloud/logs/stream?${new URLSearchParams({
    accountId: o.accountId,
    logGroups: o.logGroup,
    region: REGION,
    ...extra,
  })}`;
}

/** A refusal as the spec says it: the error object, its code, and Retry-After on a 429. */
function refusal(r: Pick<Exchange, 'status' | 'body'> & ({ headers: Exchange['headers'] } | { retryAfter?: string })) {
  if (r.status === 0) return 'no answer';
  const bad = errorObjectProblem(r.body);
  if (bad !== undefined) return `${r.status} with a body that is not the error object (${bad})`;
  const retry = 'headers' in r ? r.headers['retry-after'] : r.retryAfter;
  const retryOk = typeof retry === 'string' && /^[1-9][0-9]*$/.test(retry);
  return `${r.status} ${errorCode(r.body)}${r.status === 429 ? (retryOk ? ' with Retry-After' : ' WITHOUT Retry-After') : ''}`;
}

it("a principal's limits in one organization leave its access to another untouched", async () => {
  const agent = clientAgent(ADDRESS.noisy, 4);
  const acmeAgent = clientAgent(ADDRESS.quiet, 2);
  const url = berth.url;
  const timings: string[] = [];

  // A Globex admin mints a Globex-scoped key for the dual principal.
  const minted = await exchange(url, `/organizations/${world.globex.organizationId}/api-keys`, {
    method: 'POST',
    token: world.globexAdminToken,
    agent,
    timeoutMs: 15_000,
    body: JSON.stringify({ data: { principalId: world.dual.principalId, name: 'dual at Globex' } }),
  });
  expect(minted.status, minted.body).toBe(201);
  const key = (JSON.parse(minted.body) as { data: { token: string; organizationId: string; principalId: string } })
    .data;
  expect({ organizationId: key.organizationId, principalId: key.principalId }).toEqual({
    organizationId: world.globex.organizationId,
    principalId: world.dual.principalId,
  });
  const globexToken = key.token;

  // Ten live tails with the Globex key: the per-principal stream limit.
  const tails: SseStream[] = [];
  const tailAgent = clientAgent(ADDRESS.noisy, TAILS + 1);
  const tailHeads: string[] = [];
  for (let i = 0; i < TAILS; i++) {
    const tail = openStream(url, streamPath(world.globex, { logStreamPrefix: `app/web-${i}`, tail: 'true' }), {
      token: globexToken,
      agent: tailAgent,
    });
    tails.push(tail);
    const head = await Promise.race([tail.head, new Promise<undefined>((r) => setTimeout(r, 15_000))]);
    tailHeads.push(head === undefined ? 'no head in 15 s' : head.status === 200 ? '200' : refusal(head));
  }
  const eleventh = openStream(url, streamPath(world.globex, { logStreamPrefix: 'app/', tail: 'true' }), {
    token: globexToken,
    agent: tailAgent,
  });
  const eleventhHead = await Promise.race([eleventh.head, new Promise<undefined>((r) => setTimeout(r, 15_000))]);
  eleventh.close();
  const eleventhAnswer =
    eleventhHead === undefined ? 'no head in 15 s' : eleventhHead.status === 200 ? '200' : refusal(eleventhHead);

  /** A history stream over Acme's group with the Acme key, to its end (at most 15 s). */
  const acmeHistory = async () => {
    const stream = openStream(url, streamPath(world.acme, { logStreamPrefix: 'app/' }), {
      token: world.dual.acmeToken,
      agent: acmeAgent,
    });
    const end = await Promise.race([stream.ended, new Promise<undefined>((r) => setTimeout(r, 15_000))]);
    return end ?? stream.close();
  };
  const streamText = (o: Awaited<ReturnType<typeof acmeHistory>>) =>
    o.status === 200
      ? `200, ${o.events.length} events${o.final ? ', final' : ', no final message'}${o.errorCodes.length > 0 ? `, event: error ${o.errorCodes.join(',')}` : ''}`
      : refusal(o);
  // The Globex key holds the principal's ten streams there: its Acme key still opens one (before any flood, so only
  // the stream limit is tested here).
  const acmeStreamWhileTails = streamText(await acmeHistory());

  // 2,050 GET /me with the Globex key, 16 at a time; past the limit they must be 429 with Retry-After. Should the
  // 10 s window have turned before the limit was reached (a slow machine), the flood goes on until the first 429.
  const floodAgent = clientAgent(ADDRESS.noisy, FLOOD_CONNECTIONS);
  const statuses: Record<string, number> = {};
  const refusals = new Map<string, number>();
  let sent = 0;
  let firstRefusedAt: number | undefined;
  let retryAfterSeconds: number | undefined;
  const floodStarted = performance.now();
  const flood = async () => {
    while (sent < FLOOD || (firstRefusedAt === undefined && sent < 2 * FLOOD)) {
      sent++;
      const r = await exchange(url, '/me', { token: globexToken, agent: floodAgent, timeoutMs: 30_000 });
      statuses[String(r.status)] = (statuses[String(r.status)] ?? 0) + 1;
      if (r.status !== 200) {
        const what = r.status === 0 ? `no answer (${r.error})` : refusal(r);
        refusals.set(what, (refusals.get(what) ?? 0) + 1);
      }
      if (r.status === 429 && firstRefusedAt === undefined) {
        firstRefusedAt = performance.now();
        retryAfterSeconds = Number(r.headers['retry-after']);
      }
    }
  };
  await Promise.all(Array.from({ length: FLOOD_CONNECTIONS }, flood));
  const floodMs = performance.now() - floodStarted;
  timings.push(`flood: ${sent} × GET /me with the Globex key in ${(floodMs / 1000).toFixed(1)} s`);

  // At once, the same principal's Acme key: GET /me, a 10-row log query, a history stream.
  const acmeStarted = performance.now();
  const me = await exchange(url, '/me', { token: world.dual.acmeToken, agent: acmeAgent, timeoutMs: 15_000 });
  const query = await exchange(url, '/cloud/logs/logs-insights', {
    method: 'POST',
    token: world.dual.acmeToken,
    agent: acmeAgent,
    timeoutMs: 15_000,
    body: JSON.stringify({
      startTime: new Date(world.window.startMs).toISOString(),
      endTime: new Date(Date.now() + 60_000).toISOString(),
      moduleInstanceIds: [world.acme.moduleInstanceId],
      limit: 10,
    }),
  });
  const streamOutcome = await acmeHistory();
  const acmeMs = performance.now() - acmeStarted;
  // …while the Globex key is still refused: the Acme answers came inside the Globex key's exhausted window.
  const stillRefused = await exchange(url, '/me', { token: globexToken, agent, timeoutMs: 15_000 });
  const sinceRefused = firstRefusedAt === undefined ? Number.NaN : performance.now() - firstRefusedAt;
  timings.push(
    `Acme key's three requests in ${(acmeMs / 1000).toFixed(1)} s, right after the flood; then the Globex key again: ${refusal(stillRefused)}`,
  );

  // The tails stayed open meanwhile (not ended by the server).
  const tailsAfter = tails.map((t) => t.close());
  const tailsEnded = tailsAfter.filter((o) => o.status === 200 && o.endMs !== undefined).length;

  const acme = {
    me: me.status === 200 ? '200' : refusal(me),
    meIsAcme:
      me.status === 200 &&
      (JSON.parse(me.body) as { data: { key: { organizationId?: string } } }).data.key.organizationId ===
        world.acme.organizationId,
    query:
      query.status === 200
        ? `200 (${(JSON.parse(query.body) as { rows: unknown[] }).rows.length} rows)`
        : refusal(query),
    stream: streamText(streamOutcome),
    streamWhileTails: acmeStreamWhileTails,
  };
  const floodRefusals = [...refusals].map(([what, n]) => `${what} ×${n}`).join(', ');
  const text = [
    '',
    `### Stall: limits across organizations · ${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'} · Node ${process.version}`,
    '',
    ...timings.map((t) => `- ${t}`),
    `- Globex key: tails ${tailHeads.join(' | ')}; an eleventh: ${eleventhAnswer}`,
    `- Globex key, GET /me: ${Object.entries(statuses)
      .map(([s, n]) => `${s} ×${n}`)
      .join(
        ', ',
      )}${floodRefusals === '' ? '' : ` (${floodRefusals})`}; first 429 said Retry-After ${retryAfterSeconds ?? '–'} s`,
    `- Acme key while the Globex key held its ten tails (before the flood): stream ${acme.streamWhileTails}`,
    `- Acme key right after the flood: GET /me ${acme.me}; log query ${acme.query}; stream ${acme.stream}`,
    `- after: ${tailsEnded} of the Globex tails had been ended by the server; the Globex key ${(sinceRefused / 1000).toFixed(1)} s after its first 429: ${refusal(stillRefused)}`,
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);

  const floodRefusedHonestly = [...refusals.keys()].every(
    (w) => w === '429 http:request:rate-limited with Retry-After',
  );
  const ok = {
    tailsOpen: tailHeads.every((h) => h === '200'),
    eleventhRefused: /^429 .* with Retry-After$/.test(eleventhAnswer),
    globexRefused: (statuses['429'] ?? 0) > 0 && floodRefusedHonestly,
    acmeUntouched:
      acme.me === '200' &&
      acme.meIsAcme &&
      acme.query === '200 (10 rows)' &&
      acme.stream === '200, 50 events, final' &&
      acme.streamWhileTails === '200, 50 events, final',
    globexStillRefusedAfter: stillRefused.status === 429,
  };
  recordSummary({
    area: 'stall (issue 20)',
    check: 'limits across organizations: the Globex key at its limits (10 tails, 2,050 GET /me)',
    result: `tails ${tailHeads.filter((h) => h === '200').length}/10 open, 11th ${eleventhAnswer}; /me ${Object.entries(
      statuses,
    )
      .map(([s, n]) => `${s} ×${n}`)
      .join(', ')}`,
    ok: ok.tailsOpen && ok.eleventhRefused && ok.globexRefused,
  });
  recordSummary({
    area: 'stall (issue 20)',
    check: 'limits across organizations: the same principal’s Acme key meanwhile',
    result: `stream while the Globex tails were open: ${acme.streamWhileTails}; after the flood: /me ${acme.me}; query ${acme.query}; stream ${acme.stream}`,
    ok: ok.acmeUntouched && ok.globexStillRefusedAfter,
  });
  for (const a of [agent, acmeAgent, tailAgent, floodAgent]) a.destroy();

  expect({ ...ok, acme, eleventhAnswer, tailHeads: [...new Set(tailHeads)], tailsEnded }).toEqual({
    tailsOpen: true,
    eleventhRefused: true,
    globexRefused: true,
    acmeUntouched: true,
    globexStillRefusedAfter: true,
    acme: {
      me: '200',
      meIsAcme: true,
      query: '200 (10 rows)',
      stream: '200, 50 events, final',
      streamWhileTails: '200, 50 events, final',
    },
    eleventhAnswer: expect.stringMatching(/^429 /),
    tailHeads: ['200'],
    tailsEnded: 0,
  });
  expect(berth.server.child.exitCode).toBeNull();
}, 180_000);
