import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineToEvent } from '../../src/cli/ingest.js';
import { MAX_TIME_MS } from '../../src/core/log-time.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';

// Issue 8: strings PostgreSQL cannot store and times outside [0, MAX_TIME_MS] are 400 naming the field, never 500.

const NUL = '\u0000';
const LONE_SURROGATE = '\ud800';
const END = '9999-12-31T23:59:59.999Z';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    config: { STREAM_POLL_INTERVAL_MS: 50 },
    fixture: mergeWorld(baseWorld(), {
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
      deploymentResources: [
        {
          id: 'dr',
          moduleInstanceId: 'mi',
          type: 'aws_lambda_function',
          cloudAccountId: 'local-a',
          region: 'eu-west-1',
        },
      ],
    }),
  });
});
afterAll(async () => t.close());

const ingestBody = (over: Record<string, unknown> = {}) => ({
  accountId: 'local-a',
  region: 'eu-west-1',
  logGroup: 'in',
  logStream: 's',
  events: [{ message: 'x' }],
  ...over,
});
const ingest = (body: unknown) => t.request('POST', '/cloud/logs/local/events', { token: TOKENS.admin, body });
const queryLogs = (body: Record<string, unknown>) =>
  t.request('POST', '/cloud/logs/logs-insights', {
    token: TOKENS.viewer,
    body: { startTime: 0, endTime: MAX_TIME_MS, ...body },
  });
const createCategory = (data: Record<string, unknown>) =>
  t.request('POST', '/module-categories', {
    token: TOKENS.admin,
    body: { data: { givenId: 'strict', name: 'Strict', sortOrder: 1, ...data } },
  });
const rowsOf = async (body: Record<string, unknown> = {}) => {
  const res = await queryLogs({ moduleInstanceIds: ['mi'], complete: true, ...body });
  expect(res.status, res.text).toBe(200);
  return res.body.rows as { message: string; timestamp: number }[];
};

/** A 400 schema failure whose details name `field` (`body.events[0].timestamp`). */
function expectFieldError(res: TestResponse, code: string, field: string): void {
  expectError(res, 400, code);
  const items: string[] = (res.body.details ?? []).flatMap((d: { items?: string[] }) => d.items ?? []);
  expect(
    items.some((i) => i.startsWith(`${field}:`)),
    `${field} in ${res.text}`,
  ).toBe(true);
}

describe('strings PostgreSQL cannot store', () => {
  it('refuses a NUL in logSourceKeys with 400 naming body.logSourceKeys[0]', async () => {
    for (const key of [`mi::app${NUL}`, `m${NUL}i::app`, `mi${NUL}::app`]) {
      expectFieldError(
        await queryLogs({ logSourceKeys: [key] }),
        'validation:request:invalid-body',
        'body.logSourceKeys[0]',
      );
    }
    expectFieldError(
      await queryLogs({ logSourceKeys: ['mi::app', `mi::a${NUL}`] }),
      'validation:request:invalid-body',
      'body.logSourceKeys[1]',
    );
  });

  it('refuses a NUL in a category name, description or icon with 400 naming each, and creates nothing', async () => {
    for (const field of ['name', 'description', 'icon']) {
      const res = await createCategory({ [field]: `a${NUL}b` });
      expectFieldError(res, 'validation:request:invalid-body', `body.data.${field}`);
    }
    const res = await createCategory({ name: NUL, description: NUL, icon: NUL });
    for (const field of ['name', 'description', 'icon'])
      expectFieldError(res, 'validation:request:invalid-body', `body.data.${field}`);
    const list = await t.request('GET', '/module-categories', { token: TOKENS.viewer });
    expect(list.body.data.map((c: { givenId: string }) => c.givenId)).not.toContain('strict');
  });

  it('still takes astral characters (a surrogate pair is one code point) and stores them unchanged', async () => {
    const res = await createCategory({ givenId: 'astral', name: 'Boxes 📦', description: '𝄞 music', icon: '🚀' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'Boxes 📦', description: '𝄞 music', icon: '🚀' });
    const read = await t.request('GET', `/module-categories/${res.body.data.id}`, { token: TOKENS.viewer });
    expect(read.body.data).toMatchObject({ name: 'Boxes 📦', description: '𝄞 music', icon: '🚀' });
  });

  // Every string of every JSON body these routes take, with the field the 400 must name.
  const bodyCases: [string, string, (bad: string) => () => Promise<TestResponse>, string?][] = [
    [
      'log query',
      'body.startTime',
      (bad) => () => queryLogs({ startTime: `2024-01-01T00:00:00Z${bad}`, moduleInstanceIds: ['mi'] }),
    ],
    ['log query', 'body.endTime', (bad) => () => queryLogs({ endTime: `2024-01-01${bad}`, moduleInstanceIds: ['mi'] })],
    ['log query', 'body.environmentId', (bad) => () => queryLogs({ environmentId: `e${bad}` })],
    ['log query', 'body.moduleInstanceIds[0]', (bad) => () => queryLogs({ moduleInstanceIds: [`mi${bad}`] })],
    ['log query', 'body.logSourceKeys[0]', (bad) => () => queryLogs({ logSourceKeys: [`mi::app${bad}`] })],
    ['log query', 'body.deploymentResourceId', (bad) => () => queryLogs({ deploymentResourceId: `dr${bad}` })],
    // The filter tree has its own parser and error code (issue 4).
    [
      'log query',
      'filter.value',
      (bad) => () =>
        queryLogs({ moduleInstanceIds: ['mi'], filter: { kind: 'text', op: 'contains', value: `x${bad}` } }),
      'logs:filter:invalid',
    ],
    ['category', 'body.data.givenId', (bad) => () => createCategory({ givenId: `g${bad}` })],
    ['category', 'body.data.name', (bad) => () => createCategory({ name: `n${bad}` })],
    ['category', 'body.data.description', (bad) => () => createCategory({ description: `d${bad}` })],
    ['category', 'body.data.icon', (bad) => () => createCategory({ icon: `i${bad}` })],
    ['ingest', 'body.accountId', (bad) => () => ingest(ingestBody({ accountId: `local-a${bad}` }))],
    ['ingest', 'body.region', (bad) => () => ingest(ingestBody({ region: `eu-west-1${bad}` }))],
    ['ingest', 'body.logGroup', (bad) => () => ingest(ingestBody({ logGroup: `in${bad}` }))],
    ['ingest', 'body.logStream', (bad) => () => ingest(ingestBody({ logStream: `s${bad}` }))],
    [
      'ingest',
      'body.events[0].timestamp',
      (bad) => () => ingest(ingestBody({ events: [{ message: 'x', timestamp: `2024-01-01T00:00:00Z${bad}` }] })),
    ],
  ];
  for (const [bad, name] of [
    [NUL, 'a NUL'],
    [LONE_SURROGATE, 'a lone surrogate'],
  ] as const) {
    it.each(bodyCases)(`refuses ${name} in the %s body's %s with 400 naming it`, async (_route, field, send, code) => {
      const res = await send(bad)();
      expect(res.status, res.text).toBe(400);
      expectFieldError(res, code ?? 'validation:request:invalid-body', field);
    });
  }

  it('keeps an ingested message whatever it holds: NUL and a lone surrogate are stored as U+FFFD', async () => {
    const res = await ingest(
      ingestBody({ events: [{ message: `nul${NUL}here` }, { message: `half${LONE_SURROGATE}pair` }] }),
    );
    expect(res.status, res.text).toBe(202);
    const messages = (await rowsOf()).map((r) => r.message);
    expect(messages).toContain('nul\ufffdhere');
    expect(messages).toContain('half\ufffdpair');
  });

  // Query strings carry a NUL as %00 (a lone surrogate cannot be percent-encoded in UTF-8).
  const queryCases: [string, string][] = [
    ['/domains?moduleInstanceId=m%00i', 'query.moduleInstanceId'],
    ['/domains?moduleInstanceId=mi&cursor=abc%00', 'query.cursor'],
    ['/domains/name-availability?name=a%00.example.com', 'query.name'],
    ['/domains/name-availability?name=a.example.com&moduleInstanceId=m%00i', 'query.moduleInstanceId'],
  ];
  it.each(queryCases)('refuses a NUL in GET %s with 400 naming %s', async (path, field) => {
    expectFieldError(await t.request('GET', path, { token: TOKENS.viewer }), 'validation:request:invalid-query', field);
  });
});

describe('times outside 1970-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z', () => {
  it.each([
    ['1e300', 1e300],
    ['8.7e15', 8.7e15],
    ['MAX_TIME_MS + 1', MAX_TIME_MS + 1],
    ['-1', -1],
    ['1.5', 1.5],
    ['an ISO string whose offset moves it past the end', '9999-12-31T23:59:59-05:00'],
    ['an ISO string one millisecond past the end, by its offset', '9999-12-31T23:00:00.000-01:00'],
    ['an extended-year ISO string', '+010000-01-01T00:00:00Z'],
    ['an ISO string before 1970', '1969-12-31T23:59:59.999Z'],
  ] as [string, number | string][])(
    'refuses an ingest timestamp of %s with 400 naming body.events[0].timestamp, storing nothing',
    async (_name, timestamp) => {
      const message = `refused ${String(timestamp)}`;
      const res = await ingest(
        ingestBody({
          events: [
            { message: 'fine', timestamp: 1_700_000_000_000 },
            { message, timestamp },
          ],
        }),
      );
      expectFieldError(res, 'validation:request:invalid-body', 'body.events[1].timestamp');
      expect((await rowsOf()).map((r) => r.message)).not.toContain(message);
      const single = await ingest(ingestBody({ events: [{ message, timestamp }] }));
      expectFieldError(single, 'validation:request:invalid-body', 'body.events[0].timestamp');
    },
  );

  it('accepts 0 and 253402300799999 (and the same ends as ISO strings), readable by a log query', async () => {
    const res = await ingest(
      ingestBody({
        logStream: 'edges',
        events: [
          { message: 'edge first', timestamp: 0 },
          { message: 'edge last', timestamp: MAX_TIME_MS },
          { message: 'edge first iso', timestamp: '1970-01-01T00:00:00Z' },
          { message: 'edge last iso', timestamp: END },
          { message: 'edge last offset', timestamp: '9999-12-31T23:59:59.999+00:00' },
          { message: 'edge first offset', timestamp: '1970-01-01T01:00:00+01:00' },
        ],
      }),
    );
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ data: { accepted: 6 } });
    const edges = (await rowsOf()).filter((r) => r.message.startsWith('edge '));
    expect(Object.fromEntries(edges.map((r) => [r.message, r.timestamp]))).toEqual({
      'edge first': 0,
      'edge last': MAX_TIME_MS,
      'edge first iso': 0,
      'edge last iso': MAX_TIME_MS,
      'edge last offset': MAX_TIME_MS,
      'edge first offset': 0,
    });
    // The window's ends as ISO strings and digit strings find the same rows.
    const iso = await rowsOf({ startTime: '1970-01-01T00:00:00Z', endTime: END });
    expect(iso.filter((r) => r.message.startsWith('edge ')).length).toBe(6);
    const digits = await rowsOf({ startTime: String(MAX_TIME_MS), endTime: String(MAX_TIME_MS) });
    expect(digits.map((r) => r.message).sort()).toEqual(['edge last', 'edge last iso', 'edge last offset']);
  });

  it.each([
    ['MAX_TIME_MS + 1', MAX_TIME_MS + 1],
    ['8.7e15', 8.7e15],
    ['1e300', 1e300],
    ['-1', -1],
    ['1.5', 1.5],
    ['a digit string past the end', String(MAX_TIME_MS + 1)],
    ['an ISO string whose offset moves it past the end', '9999-12-31T23:59:59-05:00'],
    ['an ISO string before 1970', '1969-12-31T23:59:59Z'],
  ] as [string, number | string][])(
    'refuses a log query startTime or endTime of %s with 400 naming the field',
    async (_name, value) => {
      expectFieldError(
        await queryLogs({ endTime: value, moduleInstanceIds: ['mi'] }),
        'validation:request:invalid-body',
        'body.endTime',
      );
      expectFieldError(
        await queryLogs({ startTime: value, moduleInstanceIds: ['mi'] }),
        'validation:request:invalid-body',
        'body.startTime',
      );
    },
  );

  it('refuses a log stream startTime or endTime past the end with 400 naming the parameter', async () => {
    const stream = (params: string) =>
      t.request('GET', `/cloud/logs/stream?accountId=local-a&logGroups=in&logStreamPrefix=s&${params}`, {
        token: TOKENS.viewer,
      });
    for (const value of [String(MAX_TIME_MS + 1), encodeURIComponent('9999-12-31T23:59:59-05:00')]) {
      expectFieldError(await stream(`startTime=${value}`), 'validation:request:invalid-query', 'query.startTime');
      expectFieldError(
        await stream(`startTime=0&endTime=${value}`),
        'validation:request:invalid-query',
        'query.endTime',
      );
    }
  });

  it('tails an event at the last accepted millisecond with its ISO time', async () => {
    const abort = new AbortController();
    const res = await fetch(
      `${t.url}/cloud/logs/stream?accountId=local-a&logGroups=tail-end&logStreamPrefix=s&tail=true`,
      {
        headers: { authorization: `Bearer ${TOKENS.viewer}` },
        signal: abort.signal,
      },
    );
    try {
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let wire = '';
      const next = () => {
        const read = reader.read();
        read.catch(() => undefined); // rejected by the abort at the end
        return read;
      };
      let pending = next();
      // The tail takes its starting point after the headers: write again until an event lands after it.
      for (let attempt = 0; attempt < 20 && !wire.includes('the very end'); attempt++) {
        const written = await ingest(
          ingestBody({ logGroup: 'tail-end', events: [{ message: 'the very end', timestamp: MAX_TIME_MS }] }),
        );
        expect(written.status).toBe(202);
        const deadline = Date.now() + 500;
        while (!wire.includes('the very end') && Date.now() < deadline) {
          const read = await Promise.race([
            pending,
            new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now())),
          ]);
          if (read === null) break;
          expect(read.done).toBe(false);
          wire += decoder.decode(read.value, { stream: true });
          pending = next();
        }
      }
      const line = wire.split('\n').find((l) => l.includes('the very end'));
      expect(line, wire).toBeDefined();
      expect(JSON.parse(line!.slice('data:'.length)).events[0]).toMatchObject({
        message: 'the very end',
        timestamp: END,
      });
    } finally {
      abort.abort();
    }
  });
});

describe('berth logs ingest lines with their own time', () => {
  it.each(['json', 'auto'] as const)(
    'refuses an out-of-range timestamp with --format %s, naming the line, and keeps the ends',
    (format) => {
      for (const timestamp of [
        '1e300',
        '8.7e15',
        String(MAX_TIME_MS + 1),
        '-1',
        '1.5',
        '"9999-12-31T23:59:59-05:00"',
        '"yesterday"',
      ]) {
        expect(() => lineToEvent(`{"message":"m","timestamp":${timestamp}}`, format, 7)).toThrow(
          /^line 7: timestamp .* must be epoch milliseconds or an RFC 3339 date-time from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59\.999Z$/,
        );
      }
      expect(lineToEvent(`{"message":"m","timestamp":${MAX_TIME_MS}}`, format, 1)).toEqual({
        message: 'm',
        timestamp: MAX_TIME_MS,
      });
      expect(lineToEvent(`{"message":"m","timestamp":"${END}"}`, format, 1)).toEqual({ message: 'm', timestamp: END });
      expect(lineToEvent('{"message":"m","timestamp":0}', format, 1)).toEqual({ message: 'm', timestamp: 0 });
    },
  );
});
