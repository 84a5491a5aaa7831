import { storeTenancy } from '../../src/store/tenancy.js';
// Soundness of the log query on both backends (issue 4, item 3): for random filter trees over random
// rows, the rows LogQueryService returns are a superset of the exact answer (`matches`), and equal
// to it when `unsupported` is empty; walking pages returns each of them exactly once.
// local: LocalLogBackend on one database, rows written once. aws: the Insights backend through the
// real SDK against the fake, whose query handler answers every event of the window (a superset of
// what Insights would), so what is tested is Berth's own in-process layer, merge and paging.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/core/caller.js';
import { loadConfig } from '../../src/config.js';
import { matches, parseFilter, type FilterNode } from '../../src/core/filter-tree/index.js';
import { deriveLevel, type LEVELS, parseJsonMessage } from '../../src/core/log-level.js';
import { insertLocalEvents } from '../../src/store/log-ingest/events.js';
import { newerFirst } from '../../src/core/log-query/merge.js';
import { FilterPool } from '../../src/services/filter-pool/pool.js';
import { LogQueryService, type BackendFor, type LogQueryRequest } from '../../src/services/log-query/service.js';
import type { LogQueryResult } from '../../src/core/log-query/types.js';
import { createAwsClients, type AwsClients } from '../../src/providers/aws/clients.js';
import { createLogBackends, type LogBackends } from '../../src/providers/log-query/backends.js';
import type { LogBackend } from '../../src/providers/log-query/port.js';
import type { Store } from '../../src/store/db.js';
import { openSeededStore } from '../support/seeded-store.js';
import { insightsPtr, startFakeAws, type FakeAws, type QueryHandler } from '../support/fake-aws/index.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';
import { logSource } from '../support/log-source.js';
import { RawNumber, writeJson } from '../support/raw-json.js';
import { baseWorld, mergeWorld, ORG_A } from '../support/world.js';

const T = Date.UTC(2024, 0, 15, 12, 0, 0);
const SETS = 6;
const RUNS = 1000;
/** Paging walks are many queries each; over the fake's HTTP endpoint they cost the most. */
const PAGING_RUNS = { local: 100, aws: 60 };
/** Property tests run for seconds; leave room on a loaded two-core machine. */
const PROPERTY_TIMEOUT_MS = 180_000;

// ---------------------------------------------------------------------------------------------
// Rows: JSON objects with raw number spellings and level fields, text lines with level tokens, odd
// messages; few streams and a 31-millisecond range, so ties are everywhere.

const WORDS = [
  'error',
  'ERROR',
  'Error',
  'disk',
  'DISK',
  'full',
  'k',
  'K',
  '\u212A',
  's',
  'S',
  '\u017F',
  'straße',
  'é',
  'É',
  'Σ',
  'σ',
  'ς',
  '𐐀',
  'timeout',
  '30s',
  'a/b',
  'x.y',
  '*',
  '\\',
  '"',
  '\n',
  ' ',
  '-',
  '_',
  '[',
  ']',
];
const STRINGS = [
  'x',
  'X',
  'abc',
  'ab',
  '',
  '10',
  '9',
  'k',
  '\u212A',
  'é',
  '𐐀',
  'info',
  'ERROR',
  'warn',
  'debug',
  'a\nb',
];
const NUMBERS = [
  '0',
  '-0',
  '1',
  '1.0',
  '1.5',
  '10',
  '1e1',
  '2',
  '-3',
  '0.1',
  '0.10000000000000001',
  '1e400',
  '30',
  '50',
  '12345678901234567890',
];
const KEYS = ['a', 'b', 'n', 's', 'arr', 'level', 'severity', 'msg'];
const STREAMS = ['web/1', 'web/2', 'web', 'Web/1', 'worker/a', 'w', 'wé/𐐀'];
const LEADS = ['', '', 'INFO ', 'ERROR ', '[warn] ', 'debug: ', 'FATAL ', 'trace ', '2024-01-15T12:00:00Z ERROR '];

const jsonScalar = fc.oneof(
  fc.constantFrom(...STRINGS),
  fc.constantFrom(...NUMBERS).map((t) => new RawNumber(t)),
  fc.constantFrom(true, false, null),
);
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', maxDepth: 2 },
    jsonScalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('v'), { maxKeys: 3 }),
  ),
})).v;
const jsonMessage = fc.dictionary(fc.constantFrom(...KEYS), jsonValue, { maxKeys: 4 }).map(writeJson);
const textMessage = fc
  .tuple(fc.constantFrom(...LEADS), fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }))
  .map(([lead, w]) => lead + w.join(''));
const oddMessage = fc.constantFrom(
  '[1,2]',
  'null',
  '"str"',
  '{not json',
  '  {"a": 1}  ',
  '{"a": {"b": 1}}',
  '{"level": "error", "a": [1, "x"]}',
  '',
  '{}',
);

const eventArb = (dense: boolean) =>
  fc.record({
    // Dense sets put most rows in a few milliseconds: pages then end inside a millisecond of many rows.
    offset: dense ? fc.constantFrom(3, 10, 10, 10, 17, 17, 29) : fc.integer({ min: 0, max: 30 }),
    message: fc.oneof(
      { weight: 3, arbitrary: jsonMessage },
      { weight: 3, arbitrary: textMessage },
      { weight: 1, arbitrary: oddMessage },
    ),
    logStream: fc.constantFrom(...STREAMS),
  });

// ---------------------------------------------------------------------------------------------
// Trees: every node kind, values from the rows' vocabulary; some regexes outside every pushable subset.

const REGEX_ATOMS = [
  'a',
  'b',
  'k',
  'K',
  's',
  'x',
  '1',
  'é',
  '\u212A',
  'r',
  'o',
  '.',
  '\\d',
  '\\w',
  '\\W',
  '\\s',
  '[a-e]',
  '[^a-e]',
  '[kK]',
  '\\.',
  '\\*',
  '\\/',
  ' ',
  '"',
  '𐐀',
];
const NON_SUBSET = ['\\bdisk\\b', '(?i)error', '\\pL+', '(?s)a.b', '\\x41', '[[:alpha:]]', 'a\\z', 'rror$'];
const regexSource = fc
  .tuple(
    fc.constantFrom('', '', '^'),
    fc.array(
      fc.tuple(fc.constantFrom(...REGEX_ATOMS), fc.constantFrom('', '', '*', '+', '?', '{1,2}')).map(([a, q]) => a + q),
      { minLength: 1, maxLength: 4 },
    ),
    fc.constantFrom('', '', '$'),
  )
  .map(([a, body, z]) => a + body.join('') + z);
const { treeArb } = filterArbitraries({
  words: WORDS,
  fragments: ['rror', 'isk f', '{"', '"a":', 'info', ''],
  strings: STRINGS,
  numbers: [0, -0, 1, 1.5, 10, 2, -3, 0.1, 30, 50, 1e21, 12345678901234567000],
  fieldPaths: ['a', 'b', 'n', 's', 'arr', 'level', 'msg', 'a.b', 'b.a', 'missing', 'a.b.c'],
  streams: [...STREAMS, 'web/', 'wor', 'W', ''],
  regex: { source: regexSource, nonSubset: NON_SUBSET, sourceWeight: 5 },
});

const caseArb = fc.record({
  filter: treeArb,
  sets: fc.uniqueArray(fc.integer({ min: 0, max: SETS - 1 }), { minLength: 1, maxLength: 3 }),
  from: fc.integer({ min: -2, max: 32 }),
  span: fc.integer({ min: 0, max: 34 }),
});

// ---------------------------------------------------------------------------------------------

interface Known {
  eventId: string;
  timestamp: number;
  message: string;
  logStream: string;
  level: string;
  json: unknown;
  set: number;
}

const ENV = {
  AWS_ACCESS_KEY_ID: 'AKIAFAKEFAKEFAKEFAKE',
  AWS_SECRET_ACCESS_KEY: 'fake-secret-access-key',
  AWS_EC2_METADATA_DISABLED: 'true',
};
const savedEnv: Record<string, string | undefined> = {};
const caller: Caller = {
  principalId: 'p-viewer',
  keyId: 'k-viewer',
  superadmin: false,
  keyOrganizationId: ORG_A,
  memberships: new Map([[ORG_A, 'viewer']]),
};

let closeStore: (() => Promise<void>) | undefined;
let store: Store;
let fake: FakeAws;
let backends: LogBackends;
let awsClients: AwsClients;
let service: LogQueryService;
/** Where the filter's in-process part runs, as in the server. */
const filters = new FilterPool({ workers: 1, cpuBudgetMs: 60_000 });
/** Per backend, per set: every event, with its id as the service reports it. */
const known: Record<'local' | 'aws', Known[][]> = { local: [], aws: [] };

/** Every event of the query's groups inside its millisecond window, newest first: a superset of any filter. */
const supersetHandler: QueryHandler = (q, ctx) => {
  const m = /filter toMillis\(@timestamp\) >= (\d+) and toMillis\(@timestamp\) <= (\d+)/.exec(q.queryString)!;
  const events = ctx.eventsInWindow().filter((e) => e.timestamp >= Number(m[1]) && e.timestamp <= Number(m[2]));
  return { rows: events.slice(0, q.limit ?? 10_000).map((e) => ctx.toRow(e)), recordsMatched: events.length };
};

beforeAll(async () => {
  for (const [k, v] of Object.entries(ENV)) {
    savedEnv[k] = process.env[k];
    process.env[k] = v;
  }
  fake = await startFakeAws({ logs: { queryHandler: supersetHandler, queryPollsBeforeFinal: 0 } });
  ({ store, close: closeStore } = await openSeededStore(
    mergeWorld(baseWorld(), {
      cloudAccounts: [
        { id: 'acc-local', organizationId: ORG_A, provider: 'local', region: 'us-east-1' },
        { id: 'acc-aws', organizationId: ORG_A, provider: 'aws', region: 'us-east-1', endpoint: fake.endpoint },
      ],
      projects: [{ id: 'proj', organizationId: ORG_A, name: 'P' }],
      environments: [{ id: 'env', projectId: 'proj', name: 'E' }],
      moduleInstances: [
        {
          id: 'mi-sound',
          environmentId: 'env',
          name: 'sound',
          logSources: Array.from({ length: SETS }, (_, k) => [
            logSource(`l${k}`, 'acc-local', `/local/${k}`),
            logSource(`a${k}`, 'acc-aws', `/aws/${k}`),
          ]).flat(),
        },
      ],
    }),
  ));

  // Each set: one row set, written once into a local group and an aws group.
  for (let k = 0; k < SETS; k++) {
    const events = fc.sample(fc.array(eventArb(k >= SETS - 2), { minLength: 60, maxLength: 110 }), {
      numRuns: 1,
      seed: 900 + k,
    })[0]!;
    const withMeta = events.map((e, i) => {
      const json = parseJsonMessage(e.message);
      return { ...e, timestamp: T + e.offset, json, level: deriveLevel(e.message, json), i };
    });
    await insertLocalEvents(
      store.db,
      withMeta.map((e) => ({
        cloudAccountId: 'acc-local',
        region: 'us-east-1',
        logGroup: `/local/${k}`,
        logStream: e.logStream,
        timestamp: e.timestamp,
        message: e.message,
        eventId: `L${k}-${String(e.i).padStart(4, '0')}`,
      })),
    );
    known.local.push(withMeta.map((e) => ({ ...e, set: k, eventId: `L${k}-${String(e.i).padStart(4, '0')}` })));
    fake.logs.createLogGroup(`/aws/${k}`);
    const storedAws = withMeta.flatMap((e) =>
      fake.logs.putLogEvents(`/aws/${k}`, e.logStream, [{ timestamp: e.timestamp, message: e.message }]),
    );
    known.aws.push(withMeta.map((e, i) => ({ ...e, set: k, eventId: insightsPtr(storedAws[i]!) })));
  }

  const config = loadConfig({}, { LOG_LEVEL: 'silent', INSIGHTS_POLL_INTERVAL_MS: 10 });
  awsClients = createAwsClients(config, { retryStrategy: new ConfiguredRetryStrategy(3, 5) });
  backends = createLogBackends(store, config, awsClients);
  service = new LogQueryService(store.db, storeTenancy(store.db), backends.forProvider, {
    sourceTimeoutMs: 15_000,
    deadlineMs: 60_000,
    concurrency: 4,
    filters,
  });
});

afterAll(async () => {
  await filters.close();
  awsClients?.close();
  await closeStore?.();
  await fake?.close();
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

type Backend = 'local' | 'aws';
const keysOf = (backend: Backend, sets: number[]) =>
  sets.map((k) => `mi-sound::${backend === 'local' ? 'l' : 'a'}${k}`);

function exact(backend: Backend, c: { filter: FilterNode; sets: number[]; from: number; span: number }): Known[] {
  return c.sets
    .flatMap((k) => known[backend][k]!)
    .filter((e) => e.timestamp >= T + c.from && e.timestamp <= T + c.from + c.span)
    .filter((e) =>
      matches(c.filter, {
        message: e.message,
        level: e.level as (typeof LEVELS)[number],
        logStream: e.logStream,
        json: e.json,
      }),
    )
    .sort(newerFirst);
}

function checkRows(backend: Backend, result: LogQueryResult) {
  const byId = new Map(known[backend].flat().map((e) => [e.eventId, e]));
  for (const row of result.rows) {
    const e = byId.get(row.eventId!);
    expect(e, `unknown event ${row.eventId}`).toBeDefined();
    expect(row).toEqual({
      timestamp: e!.timestamp,
      level: e!.level,
      message: e!.message,
      logStream: e!.logStream,
      sourceId: 'mi-sound',
      logSourceId: `${backend === 'local' ? 'l' : 'a'}${e!.set}`,
      eventId: e!.eventId,
    });
  }
}

describe.each<Backend>(['local', 'aws'])('the %s backend', (backend) => {
  it(
    `returns a superset of the exact answer, equal to it when nothing is unsupported (${RUNS} cases)`,
    async () => {
      let nonEmpty = 0;
      let withUnsupported = 0;
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const req: LogQueryRequest = {
            startTime: T + c.from,
            endTime: T + c.from + c.span,
            logSourceKeys: keysOf(backend, c.sets),
            filter: c.filter,
            complete: true,
          };
          const result = await service.query(caller, req);
          const want = exact(backend, c);
          const got = result.rows.map((r) => r.eventId);
          expect(result.partial).toBe(false);
          expect(result.nextEndTimeMs).toBe(0);
          checkRows(backend, result);
          if (result.unsupported.length === 0) {
            expect(got).toEqual(want.map((e) => e.eventId));
          } else {
            withUnsupported++;
            expect(got).toEqual(expect.arrayContaining(want.map((e) => e.eventId)));
          }
          if (want.length > 0) nonEmpty++;
        }),
        { numRuns: RUNS, seed: backend === 'local' ? 101 : 202 },
      );
      // Both backends represent every predicate (in their query or in process).
      expect(withUnsupported).toBe(0);
      expect(nonEmpty).toBeGreaterThan(RUNS / 4);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    `walking pages with a random limit returns each matching row once, newest first (${PAGING_RUNS[backend]} cases)`,
    async () => {
      let multiPage = 0;
      let oversized = 0;
      await fc.assert(
        fc.asyncProperty(caseArb, fc.integer({ min: 1, max: 12 }), async (c, limit) => {
          const want = exact(backend, c);
          const seen: string[] = [];
          let endTime = T + c.from + c.span;
          for (let page = 0; ; page++) {
            expect(page).toBeLessThanOrEqual(c.span + 1);
            const result = await service.query(caller, {
              startTime: T + c.from,
              endTime,
              logSourceKeys: keysOf(backend, c.sets),
              filter: c.filter,
              limit,
            });
            checkRows(backend, result);
            if (result.rows.length > limit) {
              // A millisecond returned whole: the only page allowed past the limit.
              oversized++;
              expect(new Set(result.rows.map((r) => r.timestamp)).size).toBe(1);
            }
            seen.push(...result.rows.map((r) => r.eventId!));
            if (result.nextEndTimeMs === 0) break;
            expect(result.nextEndTimeMs).toBeLessThan(endTime);
            endTime = result.nextEndTimeMs;
            if (page === 1) multiPage++;
          }
          expect(seen).toEqual(want.map((e) => e.eventId));
        }),
        { numRuns: PAGING_RUNS[backend], seed: backend === 'local' ? 303 : 404 },
      );
      expect(multiPage).toBeGreaterThan(PAGING_RUNS[backend] / 4);
      expect(oversized).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('generators', () => {
  it('make valid filters and varied rows', () => {
    for (const tree of fc.sample(treeArb, { numRuns: 300, seed: 7 })) expect(parseFilter(tree)).toEqual(tree);
    const levels = new Set(known.local.flat().map((e) => e.level));
    expect(levels.size).toBeGreaterThanOrEqual(6);
    const ms = known.local[0]!.map((e) => e.timestamp);
    expect(new Set(ms).size).toBeLessThan(ms.length / 2);
  });
});

describe('LogQueryService with backends that misbehave', () => {
  function stub(fetch: LogBackend['fetch']): LogBackend {
    return {
      capabilities: backends.local.capabilities,
      units: (targets) => [targets],
      fetch,
      histogram: (r) => backends.local.histogram(r),
    };
  }
  const withStubAws =
    (aws: LogBackend): BackendFor =>
    (provider) =>
      provider === 'aws' ? aws : backends.local;
  const req = (): LogQueryRequest => ({
    startTime: T,
    endTime: T + 30,
    logSourceKeys: ['mi-sound::l0', 'mi-sound::a1', 'mi-sound::a2'],
  });

  it('reports a source that never answers, and ignores its abort signal, once its timeout passes', async () => {
    const hung = new LogQueryService(
      store.db,
      storeTenancy(store.db),
      withStubAws(stub(() => new Promise(() => undefined))),
      {
        sourceTimeoutMs: 500,
        deadlineMs: 60_000,
        concurrency: 4,
        filters,
      },
    );
    const started = Date.now();
    const result = await hung.query(caller, req());
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(result.partial).toBe(true);
    expect(result.missedSources.sort()).toEqual(['/aws/1', '/aws/2']);
    expect(result.rows.map((r) => r.eventId)).toEqual(
      known.local[0]!.slice()
        .sort(newerFirst)
        .map((e) => e.eventId),
    );
  });

  it('reports a source whose backend throws; the others answer', async () => {
    const failing = new LogQueryService(
      store.db,
      storeTenancy(store.db),
      withStubAws(stub(() => Promise.reject(new Error('boom')))),
      {
        sourceTimeoutMs: 5_000,
        deadlineMs: 60_000,
        concurrency: 4,
        filters,
      },
    );
    const result = await failing.query(caller, req());
    expect(result).toMatchObject({ partial: true, unsupported: [] });
    expect(result.missedSources.sort()).toEqual(['/aws/1', '/aws/2']);
    expect(result.rows).toHaveLength(known.local[0]!.length);
  });
});
