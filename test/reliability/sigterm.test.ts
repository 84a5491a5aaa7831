// SIGTERM under load: queries, ingests and category creations in flight and tails open. Every
// request the server had in hand gets its normal answer, every stream ends with `isFinal: true`,
// whatever gets no answer is refused at the connection (never a 5xx) and was not applied, and the
// process exits 0 within 10 s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAws, type FakeAws } from '../support/fake-aws/index.js';
import { baseWorld, mergeWorld, ORG_A, TOKENS } from '../support/world.js';
import { startBerth, type Berth } from './support/berth-process.js';
import { REFUSALS, tailingStream, worker, type Outcome, type RequestSpec } from './support/faults-sigterm.js';
import { AWS_ENV, eventually } from './support/faults-world.js';
import { FULL, recordSummary, skipped } from './support/summary.js';

const EXIT_BOUND_MS = 10_000;
const STREAMS = FULL ? 8 : 4;
const WORKERS = FULL ? 4 : 2;
const AWS_WORKERS = FULL ? 12 : 6;
const LOAD_MS = FULL ? 3_000 : 1_000;
/** The aws source answers this late: its queries are surely in the server's hands when the signal comes. */
const AWS_DELAY_MS = 60_000;

let berth: Berth;
let aws: FakeAws;
const base = Date.now() - 3_600_000;
const REGION = 'us-east-1';
const SOURCE = { cloudAccountId: 'acc-local', region: REGION, logGroup: '/app/web' };

const timeWindow = () => ({ startTime: base - 1, endTime: Date.now() + 60_000 });
const SPECS: RequestSpec[] = [
  {
    kind: 'query',
    method: 'POST',
    path: '/cloud/logs/logs-insights',
    token: TOKENS.owner,
    expected: 200,
    body: () => ({
      logSourceKeys: ['mi::ls'],
      ...timeWindow(),
      limit: 1000,
      filter: { kind: 'text', op: 'contains', value: 'took' },
    }),
  },
  {
    kind: 'aws query',
    method: 'POST',
    path: '/cloud/logs/logs-insights',
    token: TOKENS.owner,
    expected: 200,
    body: () => ({ logSourceKeys: ['mi::ls-aws'], ...timeWindow() }),
  },
  {
    kind: 'ingest',
    method: 'POST',
    path: '/cloud/logs/local/events',
    token: TOKENS.admin,
    expected: 202,
    body: (tag) => ({
      accountId: 'acc-local',
      region: REGION,
      logGroup: '/app/web',
      logStream: 'web/new',
      events: Array.from({ length: 200 }, (_, i) => ({ message: `INFO live ${tag} ${i}`, timestamp: Date.now() })),
    }),
  },
  {
    kind: 'category',
    method: 'POST',
    path: '/module-categories',
    token: TOKENS.owner,
    expected: 201,
    body: (tag) => ({ data: { givenId: `c-${tag}`, name: 'Shutdown test', sortOrder: tag } }),
  },
];

describe.skipIf(!FULL || skipped('sigterm'))('SIGTERM under load', () => {
  beforeAll(async () => {
    aws = await startFakeAws({ logUnexpectedErrors: false });
    aws.logs.putLogEvents('/aws/web', 'web/1', [{ timestamp: base, message: 'INFO from aws' }]);
    aws.delay('StartQuery', AWS_DELAY_MS);
    berth = await startBerth({
      fixture: mergeWorld(baseWorld(), {
        cloudAccounts: [
          { id: 'acc-local', organizationId: ORG_A, provider: 'local', region: REGION },
          { id: 'acc-aws', organizationId: ORG_A, provider: 'aws', region: REGION, endpoint: aws.endpoint },
        ],
        projects: [{ id: 'prj', organizationId: ORG_A, name: 'Shutdown' }],
        environments: [{ id: 'env', projectId: 'prj', name: 'production' }],
        moduleInstances: [
          {
            id: 'mi',
            environmentId: 'env',
            name: 'web',
            logSources: [
              { id: 'ls', kind: 'ui.logs', ...SOURCE },
              { id: 'ls-aws', kind: 'ui.logs', cloudAccountId: 'acc-aws', region: REGION, logGroup: '/aws/web' },
            ],
          },
        ],
        logEvents: Array.from({ length: 2_000 }, (_, i) => ({
          ...SOURCE,
          logStream: `web/${i % 4}`,
          timestamp: base + i,
          message: `INFO request ${i} took ${i % 97} ms`,
        })),
      }),
      env: {
        ...AWS_ENV,
        STREAM_POLL_INTERVAL_MS: '100',
        // Every worker's query in flight at the signal, from one key: the heavy-work share is not under test here.
        HEAVY_MAX: '64',
        HEAVY_MAX_PER_PRINCIPAL: '64',
        HEAVY_MAX_PER_ORG: '64',
        ...(process.env.SIGTERM_DEBUG ? { LOG_LEVEL: 'info' } : {}),
      },
    });
  });
  afterAll(async () => {
    await berth?.close();
    await aws?.close();
  });

  it('finishes what is in flight, ends every stream with isFinal, refuses the rest unapplied, and exits 0 within 10 s', async () => {
    const streams = await Promise.all(
      Array.from({ length: STREAMS }, () =>
        tailingStream(berth.url, TOKENS.viewer, {
          accountId: 'acc-local',
          logGroups: '/app/web',
          logStreamPrefix: 'web',
          tail: 'true',
          startTime: String(Date.now() - 1_000),
        }),
      ),
    );
    const outcomes: Outcome[] = [];
    let exitedAt: number | undefined;
    const url = berth.url;
    const stop = () => exitedAt !== undefined && Date.now() > exitedAt + 300;
    // Many aws queries: each is answered when the shutdown stops it, and its client sends the next one at once on the
    // same connection, which reaches a server already shutting down.
    const count = (spec: RequestSpec) => (spec.kind === 'aws query' ? AWS_WORKERS : WORKERS);
    const workers = SPECS.flatMap((spec) =>
      Array.from({ length: count(spec) }, () => worker(() => url, spec, outcomes, stop)),
    );

    await new Promise((r) => setTimeout(r, LOAD_MS));
    // Every aws query in the server's hands: its StartQuery has reached AWS (a busy machine may take a while).
    expect(await eventually(async () => aws.callsTo('StartQuery').length >= AWS_WORKERS, 20_000)).toBe(true);
    const doneBeforeSignal = outcomes.length;
    const heldByServer = aws.callsTo('StartQuery').length;
    const signalledAt = Date.now();
    berth.server.child.kill('SIGTERM');
    const code = await berth.server.exited;
    exitedAt = Date.now();
    await Promise.all(workers);
    const endings = await Promise.all(streams.map((s) => s.done));
    const exitMs = exitedAt - signalledAt;
    if (process.env.SIGTERM_DEBUG) console.log(berth.server.output().slice(-30_000));

    const expected = (o: Outcome) => SPECS.find((s) => s.kind === o.kind)!.expected;
    const inFlight = outcomes.filter((o) => o.sentAt < signalledAt && o.endedAt >= signalledAt);
    const abnormal = outcomes.filter((o) => o.status !== undefined && o.status !== expected(o));
    const unanswered = outcomes.filter((o) => o.error !== undefined);
    const awsHeld = inFlight.filter((o) => o.kind === 'aws query');
    const finals = endings.filter((e) => e.ended && e.last?.isFinal === true && e.lastEvent === undefined).length;

    // What was applied: categories and ingested events, read back from a new process on the same database.
    await berth.restart();
    const categories = await berth.request('GET', '/module-categories', { token: TOKENS.owner });
    const givenIds = new Set((categories.body.data as { givenId: string }[]).map((c) => c.givenId));
    const ingested = new Map<number, number>();
    // Page by page (10,000 rows at most each): endTime = nextEndTimeMs until it is 0.
    for (let endTime = timeWindow().endTime; endTime > 0; ) {
      const page = await berth.request('POST', '/cloud/logs/logs-insights', {
        token: TOKENS.owner,
        body: {
          logSourceKeys: ['mi::ls'],
          startTime: base - 1,
          endTime,
          complete: true,
          filter: { kind: 'text', op: 'startsWith', value: 'INFO live ' },
        },
      });
      expect(page.body).toMatchObject({ partial: false });
      for (const r of page.body.rows as { message: string }[]) {
        const tag = Number(r.message.split(' ')[2]);
        ingested.set(tag, (ingested.get(tag) ?? 0) + 1);
      }
      endTime = page.body.nextEndTimeMs;
    }
    const applied = (o: Outcome) =>
      o.kind === 'category' ? givenIds.has(`c-${o.tag}`) : o.kind === 'ingest' ? (ingested.get(o.tag) ?? 0) : undefined;

    recordSummary({
      area: 'faults',
      check: `SIGTERM under load (${WORKERS * (SPECS.length - 1) + AWS_WORKERS} request workers, ${STREAMS} tails)`,
      result:
        `exit ${code} in ${exitMs} ms; ${inFlight.length} requests in flight, ${inFlight.filter((o) => o.status !== undefined).length} answered normally ` +
        `(${awsHeld.length} aws queries held upstream: partial answers); ${unanswered.length} refused, none applied; ` +
        `${abnormal.length} abnormal statuses; ${finals}/${STREAMS} streams final`,
      ok: code === 0 && exitMs <= EXIT_BOUND_MS && abnormal.length === 0 && finals === STREAMS,
    });

    expect(code).toBe(0);
    expect(exitMs).toBeLessThanOrEqual(EXIT_BOUND_MS);
    expect(doneBeforeSignal).toBeGreaterThan(0);
    // Every answer is the normal one: no 5xx, no 503 "closing", no error object.
    expect(abnormal.map((o) => ({ kind: o.kind, status: o.status, body: o.body }))).toEqual([]);
    // The queries the server was working on (their StartQuery reached AWS) were answered: partial, their source stopped.
    expect(heldByServer).toBeGreaterThan(0);
    expect(awsHeld.length).toBe(heldByServer);
    for (const o of awsHeld) expect(o.body).toMatchObject({ partial: true, missedSources: ['/aws/web'] });
    // Whatever got no answer was refused at the connection, and was not applied (never cut half-way).
    expect(unanswered.filter((o) => !REFUSALS.has(o.error!)).map((o) => o.error)).toEqual([]);
    expect(unanswered.filter((o) => applied(o)).map((o) => ({ kind: o.kind, tag: o.tag, error: o.error }))).toEqual([]);
    expect(unanswered.filter((o) => o.sentAt >= signalledAt).length).toBeGreaterThan(0);
    // Whatever was answered was applied, whole.
    const answeredWrites = outcomes.filter(
      (o) => o.status !== undefined && (o.kind === 'category' || o.kind === 'ingest'),
    );
    expect(
      answeredWrites.filter((o) => applied(o) !== (o.kind === 'category' ? true : 200)).map((o) => o.kind),
    ).toEqual([]);
    // Each tail ended with the final message, then the server closed the response.
    expect(
      endings.map((e) => ({ ended: e.ended, error: e.error, last: e.last?.isFinal, lastEvent: e.lastEvent })),
    ).toEqual(
      Array.from({ length: STREAMS }, () => ({ ended: true, error: undefined, last: true, lastEvent: undefined })),
    );
  });
});
