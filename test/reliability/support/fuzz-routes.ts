// Request generators for every route: mostly well-aimed requests (valid tokens, known ids, valid
// values) with a few fields broken, so that requests reach the deep validation of each route, plus
// the generic mutations of fuzz-mutations.ts (methods, headers, bodies, targets).
import fc from 'fast-check';
import { filterArbitraries } from '../../support/filter-arbitraries.js';
import { FuzzRequest, type FuzzRequestInit } from './fuzz-request.js';
import { mutated } from './fuzz-mutations.js';
import { KNOWN } from './fuzz-world.js';
import {
  authorization,
  DATE_STRINGS,
  hostileJson,
  hugeString,
  jsonText,
  objectOf,
  OMIT,
  Pairs,
  params,
  pathSegment,
  pct,
  queryOf,
  queryString,
  Raw,
  SPECIAL_STRINGS,
  timeValue,
  type QueryPairs,
} from './fuzz-values.js';

const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];

function post(path: string, auth: [string, string][], body: unknown): FuzzRequestInit {
  return { method: 'POST', target: path, headers: [...auth, JSON_TYPE], body: Buffer.from(jsonText(body), 'utf8') };
}

/** Optional fields: left out `weight` times for each time sent. */
const optional = (arb: fc.Arbitrary<unknown>, weight = 2) =>
  fc.oneof({ weight, arbitrary: fc.constant(OMIT) }, { weight: 1, arbitrary: arb });
/** Optional query parameters: null is left out. */
const maybe = (arb: fc.Arbitrary<string>, weight = 1) =>
  fc.oneof({ weight, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
const known = (values: readonly string[]) => fc.constantFrom(...values);
/** Mostly `usual`, now and then a value at or past a limit. */
const mostly = <T>(usual: fc.Arbitrary<T>, edges: readonly T[]) =>
  fc.oneof({ weight: 5, arbitrary: usual }, { weight: 1, arbitrary: fc.constantFrom(...edges) });

// ---------------------------------------------------------------- organizations, categories

const organizations = fc.tuple(authorization, pathSegment(KNOWN.organizations)).map(
  ([auth, id]): FuzzRequestInit => ({
    method: 'GET',
    target: `/organizations/${id}/permitted-identity-providers`,
    headers: auth,
  }),
);

const givenId = mostly(fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/), [
  'dup',
  'a',
  'a-',
  '-a',
  'A',
  'a_b',
  'a'.repeat(64),
  'a'.repeat(65),
]);
const categoryFields = objectOf(
  {
    givenId,
    name: mostly(fc.string({ minLength: 1, maxLength: 100 }), [
      'x',
      'é'.repeat(100),
      'x'.repeat(101),
      '\u{1F600}'.repeat(100),
    ]),
    sortOrder: mostly<unknown>(fc.integer({ min: -2147483648, max: 2147483647 }), [
      0,
      2147483648,
      -2147483649,
      1.5,
      '1',
      new Raw('1e400'),
      new Raw('1.0'),
      new Raw('-0'),
    ]),
    description: optional(mostly(fc.string({ maxLength: 50 }), ['x'.repeat(2000), 'x'.repeat(2001)])),
    icon: optional(mostly(fc.webUrl(), ['x'.repeat(512), 'x'.repeat(513)])),
  },
  { whole: 3 },
);
const createCategory = fc
  .tuple(
    authorization,
    fc.oneof(
      { weight: 6, arbitrary: categoryFields.map((data) => new Pairs([['data', data]])) },
      { weight: 1, arbitrary: objectOf({ data: categoryFields }) },
      { weight: 1, arbitrary: categoryFields },
      { weight: 1, arbitrary: hostileJson },
    ),
  )
  .map(([auth, body]) => post('/module-categories', auth, body));

const listCategories = fc
  .tuple(authorization, queryOf(params({ limit: maybe(fc.constantFrom('1', '25'), 4), cursor: maybe(fc.string(), 4) })))
  .map(
    ([auth, query]): FuzzRequestInit => ({
      method: 'GET',
      target: `/module-categories${queryString(query)}`,
      headers: auth,
    }),
  );

const getCategory = fc
  .tuple(authorization, pathSegment(['cat-1', 'mc_0000', 'dup']))
  .map(([auth, id]): FuzzRequestInit => ({ method: 'GET', target: `/module-categories/${id}`, headers: auth }));

// ---------------------------------------------------------------- api keys

const apiKeyFields = objectOf(
  {
    principalId: optional(mostly<unknown>(known(KNOWN.principals), ['', 'x'.repeat(129), '\u0000', 7])),
    name: optional(mostly(fc.string({ minLength: 1, maxLength: 100 }), ['', 'x'.repeat(101), '\ud800'])),
    expiresInDays: optional(mostly<unknown>(fc.integer({ min: 1, max: 3650 }), [0, 3651, 1.5, '3', new Raw('1e400')])),
    expiresAt: optional(
      mostly<unknown>(
        fc
          .date({ min: new Date('2027-01-01'), max: new Date('2035-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString()),
        [...DATE_STRINGS, '9999-12-31T23:59:59Z', '2026-02-30T00:00:00Z'],
      ),
    ),
  },
  { whole: 3 },
);
const createApiKey = fc
  .tuple(
    authorization,
    pathSegment(KNOWN.organizations),
    fc.oneof(
      { weight: 6, arbitrary: apiKeyFields.map((data) => new Pairs([['data', data]])) },
      { weight: 1, arbitrary: apiKeyFields },
      { weight: 1, arbitrary: hostileJson },
    ),
  )
  .map(([auth, org, body]) => post(`/organizations/${org}/api-keys`, auth, body));

const listApiKeys = fc
  .tuple(
    authorization,
    pathSegment(KNOWN.organizations),
    queryOf(
      params({
        limit: maybe(mostly(fc.integer({ min: 1, max: 100 }).map(String), ['0', '101', '1.5', 'abc', '1e1']), 1),
        cursor: maybe(fc.oneof(fc.base64String({ maxLength: 60 }), fc.constantFrom('x'.repeat(2_049), '.', '=')), 4),
      }),
    ),
  )
  .map(
    ([auth, org, query]): FuzzRequestInit => ({
      method: 'GET',
      target: `/organizations/${org}/api-keys${queryString(query)}`,
      headers: auth,
    }),
  );

const revokeApiKey = fc.tuple(authorization, pathSegment(KNOWN.organizations), pathSegment(KNOWN.apiKeys)).map(
  ([auth, org, key]): FuzzRequestInit => ({
    method: 'DELETE',
    target: `/organizations/${org}/api-keys/${key}`,
    headers: auth,
  }),
);

// ---------------------------------------------------------------- log query

const { treeArb, leafArb } = filterArbitraries({
  words: ['ERROR', 'event', 'web', 'info', 'jobs'],
  fragments: ['', 'ev', 'RROR e', '%', '_', '\\'],
  strings: ['info', 'event 1', '', 'x'.repeat(1025)],
  numbers: [0, 1, -1, 1.5, 1e308],
  fieldPaths: ['level', 'msg', 'user.id', 'a.b.c', 'user'],
  streams: ['web/1', 'web/', 'jobs/a', ''],
  regex: {
    source: fc.constantFrom('ERROR', '^event', 'web/\\d', '(a|b)+', '.*', 'event [0-9]$', '(?i)error', '\\berror\\b'),
    nonSubset: ['(.{0,30}){30}x', '\\p{Greek}', '[^a]{2,5}z'],
    sourceWeight: 4,
  },
});

const INVALID_REGEX = [
  '(',
  '[a-',
  '*',
  '(?<name>x)',
  '\\p{Foo}',
  'a{100000}',
  '(a+)+$',
  '\\1',
  '(?=a)',
  '(?<=a)b',
  'x'.repeat(513),
  'a\u0000b',
  '[z-a]',
  '\\',
  '(?P<n>',
  '\ud800',
];

const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...INVALID_REGEX).map((value) => ({ kind: 'text', op: 'regex', value })),
  fc.constantFrom<unknown>(
    { kind: 'xyz' },
    { kind: 'text', op: 'like', value: 'a' },
    { kind: 'text', op: 'contains' },
    { kind: 'text', op: 'contains', value: 1 },
    { kind: 'field', path: '', op: 'eq', value: 1 },
    { kind: 'field', path: 'a'.repeat(257), op: 'exists' },
    { kind: 'field', path: 'a..b', op: 'exists' },
    { kind: 'field', path: 'a', op: 'in', value: Array.from({ length: 101 }, (_, i) => i) },
    { kind: 'field', path: 'a', op: 'in', value: [] },
    { kind: 'field', path: 'a', op: 'gt', value: true },
    { kind: 'field', path: 'a', op: 'gt', value: { x: 1 } },
    { kind: 'field', path: 'a', op: 'eq' },
    { kind: 'level', levels: [] },
    { kind: 'level', levels: ['NOPE'] },
    { kind: 'level', levels: 'ERROR' },
    { kind: 'and', nodes: [] },
    { kind: 'and' },
    { kind: 'or', nodes: {} },
    { kind: 'not' },
    { kind: 'not', node: null },
    { kind: 'stream', op: 'regex', value: 'x' },
    { kind: 'stream', op: 'prefix', value: '' },
    { kind: 'all', extra: 1 },
    { kind: 1 },
    { kind: null },
    { kind: ['all'] },
    { Kind: 'all' },
    new Raw('{"kind":"all","kind":"and"}'),
    new Raw('{"kind":"and","nodes":[{"kind":"all"}],"__proto__":{"kind":"or"}}'),
    { kind: 'text', op: 'contains', value: 'x'.repeat(1025) },
  ),
  fc
    .constantFrom('contains', 'equals', 'startsWith', 'regex')
    .chain((op) => hugeString.map((value) => ({ kind: 'text', op, value }))),
  hostileJson,
);

/** Deep (past 16) and wide (past 256 nodes) trees, and valid trees with hostile leaves mixed in. */
const hostileTree: fc.Arbitrary<unknown> = fc.oneof(
  fc
    .constantFrom(15, 16, 17, 100, 1_000, 10_000, 40_000)
    .map((d) => new Raw(`${'{"kind":"not","node":'.repeat(d)}{"kind":"all"}${'}'.repeat(d)}`)),
  fc
    .constantFrom(16, 17, 200)
    .map((d) => new Raw(`${'{"kind":"and","nodes":['.repeat(d)}{"kind":"all"}${']}'.repeat(d)}`)),
  fc
    .tuple(fc.constantFrom(255, 256, 257, 1_000, 20_000), leafArb)
    .map(([n, leaf]) => ({ kind: 'or', nodes: Array.from({ length: n }, () => leaf) })),
  fc.letrec<{ node: unknown }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', maxDepth: 4 },
      leafArb,
      hostileLeaf,
      fc.record({ kind: fc.constantFrom('and', 'or'), nodes: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ kind: fc.constant('not'), node: tie('node') }),
    ),
  })).node,
);

const windowStart = fc.constantFrom<unknown>(
  '2025-12-31T00:00:00Z',
  Date.UTC(2025, 11, 31),
  String(Date.UTC(2025, 11, 31)),
  0,
  '1970-01-01T00:00:00Z',
);
const windowEnd = fc.constantFrom<unknown>(
  '2026-01-02T00:00:00Z',
  Date.UTC(2026, 0, 1, 0, 0, 2),
  String(Date.UTC(2026, 0, 2)),
  '9999-12-31T23:59:59.999Z',
);
const moduleInstanceIds = mostly<unknown>(fc.subarray([...KNOWN.moduleInstances], { minLength: 1 }), [
  [],
  ...[500, 501, 5_000].map((n) => Array.from({ length: n }, (_, i) => `mi-${i}`)),
]);
const logSourceKeys = mostly<unknown>(fc.subarray([...KNOWN.logSourceKeys], { minLength: 1 }), [
  ['a::'],
  ['::b'],
  ['::'],
  ['a::b::c'],
  ['mi-a-web:app'],
  ['mi-a-web::'],
  Array.from({ length: 501 }, () => 'a::b'),
]);
/** The selector rules of the spec: one of the forms it allows, or (now and then) none or a forbidden combination. */
const selectors: fc.Arbitrary<[string, unknown][]> = fc.oneof(
  { weight: 3, arbitrary: known(KNOWN.environments).map((e): [string, unknown][] => [['environmentId', e]]) },
  {
    weight: 1,
    arbitrary: fc.tuple(known(KNOWN.environments), moduleInstanceIds).map(([e, m]): [string, unknown][] => [
      ['environmentId', e],
      ['moduleInstanceIds', m],
    ]),
  },
  { weight: 2, arbitrary: moduleInstanceIds.map((m): [string, unknown][] => [['moduleInstanceIds', m]]) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(logSourceKeys, fc.option(moduleInstanceIds))
      .map(([k, m]): [string, unknown][] => [
        ['logSourceKeys', k],
        ...(m === null ? [] : [['moduleInstanceIds', m] as [string, unknown]]),
      ]),
  },
  {
    weight: 2,
    arbitrary: known(KNOWN.deploymentResources).map((d): [string, unknown][] => [['deploymentResourceId', d]]),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(known(KNOWN.deploymentResources), known(KNOWN.environments))
      .map(([d, e]): [string, unknown][] => [
        ['deploymentResourceId', d],
        ['environmentId', e],
      ]),
  },
  { weight: 1, arbitrary: fc.constant<[string, unknown][]>([]) },
);
/** The log query's fields (the histogram takes them too). */
const logQueryFields = {
  startTime: fc.oneof({ weight: 3, arbitrary: windowStart }, { weight: 1, arbitrary: timeValue }),
  endTime: fc.oneof({ weight: 3, arbitrary: windowEnd }, { weight: 1, arbitrary: timeValue }),
  limit: optional(
    mostly<unknown>(fc.integer({ min: 1, max: 10_000 }), [
      0,
      -1,
      10_001,
      1.5,
      '10',
      new Raw('1e400'),
      new Raw('1.0'),
      new Raw('1E1'),
    ]),
    1,
  ),
  complete: optional(mostly<unknown>(fc.boolean(), ['true', 1, null]), 2),
  filter: optional(fc.oneof({ weight: 3, arbitrary: treeArb }, { weight: 2, arbitrary: hostileTree }), 1),
};
const logQueryBody = objectOf(logQueryFields, { together: selectors });
const logQuery = fc
  .tuple(authorization, logQueryBody)
  .map(([auth, body]) => post('/cloud/logs/logs-insights', auth, body));

const histogramBody = objectOf(
  {
    ...logQueryFields,
    buckets: optional(
      mostly<unknown>(fc.integer({ min: 1, max: 200 }), [
        0,
        201,
        -1,
        1.5,
        '60',
        null,
        new Raw('1e400'),
        new Raw('6E1'),
      ]),
      1,
    ),
  },
  { together: selectors },
);
const logHistogram = fc
  .tuple(authorization, histogramBody)
  .map(([auth, body]) => post('/cloud/logs/logs-insights/histogram', auth, body));

// ---------------------------------------------------------------- who am I, what can I see, the page

const me = authorization.map((auth): FuzzRequestInit => ({ method: 'GET', target: '/me', headers: auth }));

const logCatalog = fc
  .tuple(authorization, pathSegment(KNOWN.organizations))
  .map(([auth, id]): FuzzRequestInit => ({ method: 'GET', target: `/organizations/${id}/log-catalog`, headers: auth }));

// ---------------------------------------------------------------- sign-in and identities

const PROVIDER_SEGMENTS = ['SSO_BROKER', 'SOCIAL_1', 'EMAIL_PASSWORD', 'social_1', 'NOPE', '%00', '..'];
/** A session cookie: mostly well-formed and unknown, now and then hostile. */
const sessionCookie = fc
  .oneof(
    fc.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    fc.constantFrom('', ';', 'x'.repeat(5000), '%00', '"quoted"', 'a=b=c'),
    fc.string(),
  )
  .map((value): [string, string][] => [['Cookie', `berth_session=${value}`]]);
const credentials = fc.oneof(authorization, sessionCookie);

const signInMethods = queryOf(params({ organizationId: maybe(known(KNOWN.organizations), 2) })).map(
  (query): FuzzRequestInit => ({ method: 'GET', target: `/auth/providers${queryString(query)}`, headers: [] }),
);

const sessionState = sessionCookie.map(
  (cookie): FuzzRequestInit => ({ method: 'GET', target: '/auth/session', headers: cookie }),
);

const signInStart = fc
  .tuple(
    pathSegment(PROVIDER_SEGMENTS),
    queryOf(
      params({
        returnTo: maybe(fc.constantFrom('/ui/logs', '//evil.example', 'https://evil.example/', '/\\x', 'javascript:x')),
        organizationId: maybe(known(KNOWN.organizations)),
      }),
    ),
  )
  .map(
    ([provider, query]): FuzzRequestInit => ({
      method: 'GET',
      target: `/auth/sign-in/${provider}${queryString(query)}`,
      headers: [],
    }),
  );

const signInCallback = fc
  .tuple(
    pathSegment(PROVIDER_SEGMENTS),
    queryOf(
      params({
        code: maybe(fc.string()),
        state: maybe(fc.string()),
        iss: maybe(fc.string()),
        error: maybe(fc.string()),
      }),
    ),
    fc.option(
      fc.string().map((v): [string, string][] => [['Cookie', `berth_sign_in=${v}`]]),
      { freq: 2 },
    ),
  )
  .map(
    ([provider, query, cookie]): FuzzRequestInit => ({
      method: 'GET',
      target: `/auth/callback/${provider}${queryString(query)}`,
      headers: cookie ?? [],
    }),
  );

const passwordSignIn = objectOf({ email: fc.oneof(fc.emailAddress(), fc.string()), password: fc.string() }).map(
  (body) => post('/auth/password', [], body),
);

const signOut = fc.tuple(sessionCookie, fc.option(fc.constantFrom('http://evil.example', 'null'), { freq: 2 })).map(
  ([cookie, origin]): FuzzRequestInit => ({
    method: 'POST',
    target: '/auth/sign-out',
    headers: origin === null ? cookie : [...cookie, ['Origin', origin]],
  }),
);

const myIdentities = fc.tuple(credentials, fc.option(pathSegment(['idn_x', 'nope', '%2e%2e']), { freq: 2 })).map(
  ([auth, id]): FuzzRequestInit => ({
    method: id === null ? 'GET' : 'DELETE',
    target: id === null ? '/me/identities' : `/me/identities/${id}`,
    headers: auth,
  }),
);

const memberIdentities = fc
  .tuple(
    credentials,
    pathSegment(KNOWN.organizations),
    pathSegment(['p-viewer', 'p-owner', 'nope']),
    fc.option(pathSegment(['idn_x']), { freq: 2 }),
  )
  .map(
    ([auth, org, principal, id]): FuzzRequestInit => ({
      method: id === null ? 'GET' : 'DELETE',
      target: `/organizations/${org}/members/${principal}/identities${id === null ? '' : `/${id}`}`,
      headers: auth,
    }),
  );

/** The log explorer's files: public, so no token; paths that try to leave its folder or reach a dot file. */
const uiPage = fc
  .tuple(
    fc.oneof(
      fc.constantFrom('/ui', '/ui/', '/ui/logs', '/ui/index.html', '/ui/assets/', '/ui/.env', '/ui/..%2fpackage.json'),
      fc
        .constantFrom('/ui/', '/ui/assets/', '/ui/logs/')
        .chain((base) => pathSegment(['index.html', 'logs', '.env', '..', 'icon.svg']).map((seg) => base + seg)),
    ),
    fc.option(authorization, { freq: 3 }),
  )
  .map(([target, auth]): FuzzRequestInit => ({ method: 'GET', target, headers: auth ?? [] }));

// ---------------------------------------------------------------- log stream and ingest

const FILTER_PATTERNS = [
  '',
  'ERROR',
  '?ERROR ?WARN',
  '"event 1"',
  '-ERROR',
  '{ $.level = "info" }',
  '{ $.user.id > 1 }',
  '{ ($.a = 1) && ($.b = 2) }',
  '{ $.a = * }',
  '{ $.a IS NULL }',
  '%ERR%',
  '%(%',
  '%a% %b% %c%',
  '"unterminated',
  '{ $.a = ',
  '{ ($.a = 1) && ($.b = 2 }',
  '[w1, w2]',
  '[ip, user, ...]',
  '{ $.x[0] = 1 }',
  '{ $.a = "\\"" }',
  '{ $. = 1 }',
  '{}',
  '{',
  '}',
  '?',
  '"',
  '%',
  '%%',
  '[',
  '[,]',
  'x'.repeat(1_024),
  'x'.repeat(1_025),
  '{ $.a = 1e400 }',
  '{ $.a = -0 }',
  '\u0000',
  '\ud800',
];
/** Exactly one of logStreamPrefix and logStreamNames (as the spec asks), now and then both or neither. */
const streamSelector = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('web/', 'jobs/', 'w').map((p) => [['logStreamPrefix', pct(p)]] as QueryPairs),
  },
  {
    weight: 4,
    arbitrary: fc
      .subarray([...KNOWN.logStreams], { minLength: 1 })
      .map((names) => [['logStreamNames', names.map(pct).join(',')]] as QueryPairs),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<QueryPairs>(
      [],
      [['logStreamPrefix', '']],
      [
        ['logStreamPrefix', 'web/'],
        ['logStreamNames', 'web/1'],
      ],
      [['logStreamNames', Array.from({ length: 101 }, (_, i) => `s${i}`).join(',')]],
    ),
  },
);
const streamParams = fc
  .tuple(
    params({
      accountId: known(KNOWN.accounts),
      logGroups: mostly(
        fc.subarray([...KNOWN.logGroups], { minLength: 1, maxLength: 2 }).map((g) => g.join(',')),
        [Array.from({ length: 51 }, (_, i) => `/g/${i}`).join(','), '', ',', '/app/web,,/app/jobs'],
      ),
      region: maybe(known(KNOWN.regions), 1),
      startTime: maybe(mostly(fc.constantFrom('2025-12-31T00:00:00Z', '0', '1767225600000'), DATE_STRINGS), 1),
      endTime: maybe(mostly(fc.constantFrom('2026-01-02T00:00:00Z', '1767312000000'), DATE_STRINGS), 2),
      // Mostly a bounded history read; a live tail now and then (cut by the client after its first bytes).
      tail: fc.oneof(
        { weight: 12, arbitrary: fc.constant('false') },
        { weight: 1, arbitrary: fc.constantFrom('true', '1', 'yes', 'FALSE', '', 'null') },
      ),
      filterPattern: maybe(mostly(fc.constantFrom(...FILTER_PATTERNS), SPECIAL_STRINGS), 1),
    }),
    streamSelector,
  )
  .map(([pairs, selector]) => [...pairs, ...selector]);
const stream = fc
  .tuple(
    authorization,
    queryOf(streamParams),
    fc.option(
      fc.constantFrom(
        '',
        'garbage',
        'eyJwIjoiaCJ9',
        'eyJwIjoiaCIsInRzIjoxZTQwMCwiZSI6IngifQ',
        'eyJwIjoidCJ9',
        'x'.repeat(5_000),
        '%00',
        '\xff',
      ),
      { freq: 6 },
    ),
  )
  .map(
    ([auth, query, lastEventId]): FuzzRequestInit => ({
      method: 'GET',
      target: `/cloud/logs/stream${queryString(query)}`,
      headers: [...auth, ...(lastEventId === null ? [] : [['Last-Event-ID', lastEventId] as [string, string]])],
    }),
  );

const ingestEvent = objectOf(
  {
    message: mostly(fc.string({ maxLength: 40 }), SPECIAL_STRINGS),
    timestamp: optional(mostly<unknown>(fc.integer({ min: 0, max: 253402300799999 }), DATE_STRINGS), 1),
  },
  { whole: 12 },
);
const ingestBody = objectOf({
  accountId: fc.constantFrom('acct-a', 'acct-a', 'acct-a', 'acct-b'),
  region: fc.constantFrom('eu-west-1', 'eu-west-1', 'us-east-1'),
  logGroup: known(KNOWN.logGroups),
  logStream: mostly(known([...KNOWN.logStreams, 'fuzz/1']), ['x'.repeat(512), 'x'.repeat(513), 'a/b', ' ']),
  events: fc.oneof(
    { weight: 12, arbitrary: fc.array(ingestEvent, { maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(10_000, 10_001)
        .map((n) => new Raw(`[${Array.from({ length: n }, () => '{"message":""}').join(',')}]`)),
    },
    { weight: 1, arbitrary: fc.constant(new Raw(`[{"message":"${'m'.repeat(262_145)}"}]`)) },
  ),
});
const ingest = fc.tuple(authorization, ingestBody).map(([auth, body]) => post('/cloud/logs/local/events', auth, body));

// ---------------------------------------------------------------- domains and certificates

const DOMAIN_NAMES = [
  'com',
  'co.uk',
  '*.com',
  '*',
  '*.*.example',
  'a..b',
  '-a.example',
  'a-.example',
  'xn--',
  'xn--zz.example',
  'ümlaut.example',
  'ÉXAMPLE.COM.',
  `${'a'.repeat(63)}.example`,
  `${'a'.repeat(64)}.example`,
  `${'abcdefghi.'.repeat(25)}example`,
  '1.2.3.4',
  '[::1]',
  'localhost',
  'exa mple.com',
  'example.com..',
  '.example.com',
  '_dmarc.example.com',
  'xn--80ak6aa92e.com',
  '\u0000.example',
  '😀.example',
  'x.berth.app',
  'BERTH.DEV.',
  'a.b.apps.acme.example',
  '*.acme.example',
  'ex\u200bample.com',
  'exam\u00adple.com',
];
const domains = fc
  .tuple(
    authorization,
    queryOf(
      params({
        moduleInstanceId: known(KNOWN.moduleInstances),
        limit: maybe(
          mostly(fc.integer({ min: 1, max: 100 }).map(String), [
            '101',
            '0',
            '-1',
            '1.5',
            '1e400',
            'abc',
            ' 1',
            '0x10',
            '1e1',
          ]),
          1,
        ),
        cursor: maybe(
          fc.oneof(fc.base64String({ maxLength: 60 }), fc.constantFrom('x'.repeat(2_049), 'eyJ9', '.', '=')),
          4,
        ),
      }),
    ),
  )
  .map(([auth, query]): FuzzRequestInit => ({ method: 'GET', target: `/domains${queryString(query)}`, headers: auth }));

const nameAvailability = fc
  .tuple(
    authorization,
    queryOf(
      params({
        name: fc.oneof(known(KNOWN.domainNames), fc.constantFrom(...DOMAIN_NAMES), fc.domain()),
        moduleInstanceId: maybe(known(KNOWN.moduleInstances), 1),
      }),
    ),
  )
  .map(
    ([auth, query]): FuzzRequestInit => ({
      method: 'GET',
      target: `/domains/name-availability${queryString(query)}`,
      headers: auth,
    }),
  );

const retryValidation = fc
  .tuple(
    authorization,
    pathSegment(KNOWN.certificates),
    fc.option(fc.oneof(hostileJson.map(jsonText), fc.constant('{}')), { freq: 4 }),
  )
  .map(
    ([auth, id, body]): FuzzRequestInit => ({
      method: 'POST',
      target: `/managed-certificates/${id}/retry-validation`,
      headers: body === null ? auth : [...auth, JSON_TYPE],
      ...(body === null ? {} : { body: Buffer.from(body, 'utf8') }),
    }),
  );

// ---------------------------------------------------------------- operations

const operations = fc
  .tuple(
    fc.constantFrom('/healthz', '/readyz', '/metrics', '/openapi.json'),
    fc.option(authorization, { freq: 3 }),
    queryOf(params({ format: maybe(fc.constantFrom('json', 'x'), 3) })),
  )
  .map(
    ([path, auth, query]): FuzzRequestInit => ({
      method: 'GET',
      target: `${path}${queryString(query)}`,
      headers: auth ?? [],
    }),
  );

/** Every route's generator, with the generic mutations applied to a share of its requests. */
export const ROUTES: { name: string; arb: fc.Arbitrary<FuzzRequest> }[] = [
  { name: 'GET /organizations/{id}/permitted-identity-providers', arb: organizations },
  { name: 'POST /organizations/{organizationId}/api-keys', arb: createApiKey },
  { name: 'GET /organizations/{organizationId}/api-keys', arb: listApiKeys },
  { name: 'DELETE /organizations/{organizationId}/api-keys/{keyId}', arb: revokeApiKey },
  { name: 'POST /module-categories', arb: createCategory },
  { name: 'GET /module-categories', arb: listCategories },
  { name: 'GET /module-categories/{id}', arb: getCategory },
  { name: 'POST /cloud/logs/logs-insights', arb: logQuery },
  { name: 'POST /cloud/logs/logs-insights/histogram', arb: logHistogram },
  { name: 'GET /me', arb: me },
  { name: 'GET /organizations/{id}/log-catalog', arb: logCatalog },
  { name: 'GET /ui/… (the log explorer page)', arb: uiPage },
  { name: 'GET /cloud/logs/stream', arb: stream },
  { name: 'POST /cloud/logs/local/events', arb: ingest },
  { name: 'GET /domains', arb: domains },
  { name: 'GET /domains/name-availability', arb: nameAvailability },
  { name: 'POST /managed-certificates/{id}/retry-validation', arb: retryValidation },
  { name: 'GET /healthz, /readyz, /metrics, /openapi.json', arb: operations },
  { name: 'GET /auth/providers', arb: signInMethods },
  { name: 'GET /auth/session', arb: sessionState },
  { name: 'GET /auth/sign-in/{provider}', arb: signInStart },
  { name: 'GET /auth/callback/{provider}', arb: signInCallback },
  { name: 'POST /auth/password', arb: passwordSignIn },
  { name: 'POST /auth/sign-out', arb: signOut },
  { name: 'GET, DELETE /me/identities[/{identityId}]', arb: myIdentities },
  {
    name: 'GET, DELETE /organizations/{organizationId}/members/{principalId}/identities[/{identityId}]',
    arb: memberIdentities,
  },
].map(({ name, arb }) => ({ name, arb: mutated(arb).map((init) => new FuzzRequest(init)) }));
