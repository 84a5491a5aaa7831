import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { Kysely, sql, type RawBuilder } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { RE2JS } from 're2js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEVELS, parseJsonMessage, type Level } from '../../src/core/log-level.js';
import {
  canPushToSql,
  compileBoundedSqlFilter,
  compileSqlFilter,
  regexPrefilter,
  sqlCapabilities,
  sqlSize,
} from '../../src/core/filter-tree/compile-sql.js';
import { matches, type FilterRow } from '../../src/core/filter-tree/evaluate.js';
import { parseFilter } from '../../src/core/filter-tree/parse.js';
import { planFilter, type FilterCapabilities } from '../../src/core/filter-tree/plan.js';
import {
  PORTABLE_REGEX,
  POSTGRES_REGEX,
  emitRegex,
  parseRegexSubset,
} from '../../src/core/filter-tree/regex-subset.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';
import { RawNumber, writeJson } from '../support/raw-json.js';

// ---------------------------------------------------------------------------
// One PGlite for the file; each row set is written once and queried by many trees.

let pg: PGlite;
let db: Kysely<any>;

interface Row extends FilterRow {
  id: number;
}

let rows: Row[] = [];

async function loadRows(messages: Array<{ message: string; level: Level; logStream: string }>): Promise<void> {
  await sql`TRUNCATE events`.execute(db);
  rows = messages.map((m, id) => ({ id, ...m, json: parseJsonMessage(m.message) }));
  for (let i = 0; i < rows.length; i += 200) {
    const values = rows
      .slice(i, i + 200)
      .map(
        (r) =>
          sql`(${r.id}, ${r.message}, ${r.level}, ${r.logStream}, ${r.json === undefined ? null : r.message}::jsonb)`,
      );
    await sql`INSERT INTO events (id, message, level, log_stream, json) VALUES ${sql.join(values)}`.execute(db);
  }
}

async function sqlIds(where: RawBuilder<boolean>): Promise<number[]> {
  const result = await sql<{ id: number }>`SELECT id FROM events WHERE ${where} ORDER BY id`.execute(db);
  return result.rows.map((r) => r.id);
}

function exactIds(node: FilterNode, among: readonly Row[] = rows): number[] {
  return among.filter((r) => matches(node, r)).map((r) => r.id);
}

beforeAll(async () => {
  pg = new PGlite();
  db = new Kysely<any>({ dialect: new PGliteDialect(pg) });
  await sql`CREATE TABLE events (id int PRIMARY KEY, message text NOT NULL, level text NOT NULL, log_stream text NOT NULL, json jsonb)`.execute(
    db,
  );
});

afterAll(async () => {
  await db.destroy();
});

// ---------------------------------------------------------------------------
// Rows: JSON objects written with raw number spellings, text lines, near-JSON.

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
  'STRASSE',
  'ẞ',
  'é',
  'É',
  'Σ',
  'σ',
  'ς',
  '𐐀',
  '𐐨',
  '\uFFFD',
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
const STRINGS = ['x', 'X', 'abc', 'ab', 'ABC', '', '10', '9', 'k', '\u212A', 'é', 'É', '𐐀', '\uFFFD', 'zz', 'a\nb'];
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
  '1e21',
  '1e400',
  '-1e400',
  '1e-400',
  '12345678901234567890',
  '9007199254740993',
];
const KEYS = ['a', 'b', 'c', 'n', 's', 'arr', 'level'];
const STREAMS = ['web/1', 'web/2', 'web', 'Web/1', 'worker/a', 'w', '', 'wé/𐐀'];

const jsonScalar = fc.oneof(
  fc.constantFrom(...STRINGS),
  fc.constantFrom(...NUMBERS).map((t) => new RawNumber(t)),
  fc.constantFrom(true, false, null),
);
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    jsonScalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('v'), { maxKeys: 3 }),
  ),
})).v;

const jsonMessage = fc.dictionary(fc.constantFrom(...KEYS), jsonValue, { maxKeys: 4 }).map(writeJson);
const textMessage = fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }).map((w) => w.join(''));
const oddMessage = fc.constantFrom(
  '[1,2]',
  'null',
  '"str"',
  '{not json',
  '  {"a": 1}  ',
  '{"a": {"b": 1}}',
  '{"a": [1, "x"]}',
  '',
  '{}',
);

const rowArb = fc.record({
  message: fc.oneof(
    { weight: 3, arbitrary: jsonMessage },
    { weight: 3, arbitrary: textMessage },
    { weight: 1, arbitrary: oddMessage },
  ),
  level: fc.constantFrom(...LEVELS),
  logStream: fc.constantFrom(...STREAMS),
});

// ---------------------------------------------------------------------------
// Trees: every node kind, values drawn from the same vocabulary as the rows.

const REGEX_ATOMS = [
  'a',
  'b',
  'k',
  'K',
  's',
  'S',
  'x',
  '1',
  'é',
  '\u212A',
  'ſ',
  'r',
  'o',
  '.',
  '\\d',
  '\\D',
  '\\w',
  '\\W',
  '\\s',
  '\\S',
  '[a-e]',
  '[^a-e]',
  '[kK]',
  '[^k]',
  '[a\\-z]',
  '[]a]',
  '[\\d_]',
  '[^\\s]',
  '\\.',
  '\\*',
  '\\/',
  '\\n',
  ' ',
  '{',
  '}',
  ']',
  '-',
  '"',
  '𐐀',
];
const NON_SUBSET = [
  '\\bdisk\\b',
  '(?i)error',
  '\\pL+',
  'x{300}',
  '(?s)a.b',
  '\\x41',
  '[[:alpha:]]',
  'a\\z',
  '\\Qa.b\\E',
];

const regexSource: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => {
  const piece = fc.oneof(
    { depthSize: 'small', maxDepth: 2 },
    fc.constantFrom(...REGEX_ATOMS),
    tie('re').map((r) => `(${r})`),
    tie('re').map((r) => `(?:${r})`),
  );
  const quantified = fc
    .tuple(piece, fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '+?'))
    .map(([p, q]) => p + q);
  const seq = fc.array(quantified, { maxLength: 4 }).map((items) => items.join(''));
  return {
    re: fc
      .tuple(fc.constantFrom('', '', '^'), fc.array(seq, { minLength: 1, maxLength: 3 }), fc.constantFrom('', '', '$'))
      .map(([a, alts, z]) => a + alts.join('|') + z),
  };
}).re;

const { regexArb, treeArb } = filterArbitraries({
  words: WORDS,
  fragments: ['rror', 'isk f', '{"', '"a":', 'k s', ''],
  strings: STRINGS,
  numbers: [0, -0, 1, 1.5, 10, 2, -3, 0.1, 1e21, 1e308, -1e308, 12345678901234567000, 9007199254740992],
  fieldPaths: ['a', 'b', 'n', 's', 'arr', 'level', 'a.b', 'a.a', 'b.c', 'missing', 'a.b.c'],
  streams: [...STREAMS, 'web/', 'wor', 'W'],
  regex: { source: regexSource, nonSubset: NON_SUBSET, sourceWeight: 6, maxLength: 512 },
});

// ---------------------------------------------------------------------------

const ROW_SETS = 4;
const RUNS_PER_SET = 300;

function rowSet(seed: number) {
  return fc.sample(fc.array(rowArb, { minLength: 120, maxLength: 160 }), { numRuns: 1, seed })[0]!;
}

describe('compileSqlFilter against PGlite', () => {
  it('generated trees are valid filters', () => {
    for (const tree of fc.sample(treeArb, { numRuns: 300, seed: 7 })) expect(parseFilter(tree)).toEqual(tree);
  });

  it(`returns exactly the rows evaluate() matches when fully pushed, and a superset otherwise (${ROW_SETS}×${RUNS_PER_SET} cases)`, async () => {
    let fullyPushed = 0;
    for (let set = 0; set < ROW_SETS; set++) {
      await loadRows(rowSet(1000 + set));
      await fc.assert(
        fc.asyncProperty(treeArb, async (tree) => {
          const plan = planFilter(tree, sqlCapabilities);
          expect(plan.unsupported).toEqual([]);
          expect(plan.effective).toEqual(tree);
          const exact = exactIds(tree);
          const got = await sqlIds(compileSqlFilter(plan.pushed));
          if (plan.exact) {
            fullyPushed++;
            expect(got).toEqual(exact);
          } else {
            expect(got).toEqual(expect.arrayContaining(exact));
            const kept = rows.filter((r) => got.includes(r.id) && matches(plan.effective, r)).map((r) => r.id);
            expect(kept).toEqual(exact);
          }
        }),
        { numRuns: RUNS_PER_SET, seed: 2000 + set },
      );
    }
    // Trees without a regex are pushed whole; a regex always stays in process (behind its required literals).
    expect(fullyPushed).toBeGreaterThan(ROW_SETS * RUNS_PER_SET * 0.3);
  });

  it('with a restricted backend: pushed ⊇ effective ⊇ original, exact after the in-process pass', async () => {
    await loadRows(rowSet(3000));
    const restricted: FilterCapabilities = {
      backend: 'a restricted backend',
      canPush: (leaf) =>
        canPushToSql(leaf) &&
        leaf.kind !== 'level' &&
        !(leaf.kind === 'field' && leaf.op !== 'exists' && leaf.op !== 'eq'),
      canApplyInProcess: (leaf) =>
        !(leaf.kind === 'text' && leaf.op === 'regex') && !(leaf.kind === 'field' && leaf.op === 'contains'),
    };
    let withDrops = 0;
    await fc.assert(
      fc.asyncProperty(treeArb, async (tree) => {
        const plan = planFilter(tree, restricted);
        const original = exactIds(tree);
        const effective = exactIds(plan.effective);
        const got = await sqlIds(compileSqlFilter(plan.pushed));
        expect(got).toEqual(expect.arrayContaining(effective));
        expect(effective).toEqual(expect.arrayContaining(original));
        const kept = rows.filter((r) => got.includes(r.id) && matches(plan.effective, r)).map((r) => r.id);
        expect(kept).toEqual(effective);
        if (plan.unsupported.length === 0) expect(kept).toEqual(original);
        else withDrops++;
      }),
      { numRuns: 400, seed: 4000 },
    );
    expect(withDrops).toBeGreaterThan(20);
  });

  it('translates subset regexes so PostgreSQL (and RE2 reading the Insights spelling) match exactly what RE2 matches', async () => {
    await loadRows(rowSet(5000));
    let translated = 0;
    await fc.assert(
      fc.asyncProperty(regexArb, fc.boolean(), async (source, caseInsensitive) => {
        const ast = parseRegexSubset(source, caseInsensitive);
        const pattern = ast && emitRegex(ast, POSTGRES_REGEX);
        if (pattern === undefined) return;
        translated++;
        const re = RE2JS.compile(source, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
        const expected = rows.filter((r) => re.test(r.message)).map((r) => r.id);
        expect(await sqlIds(sql<boolean>`message ~ ${pattern}`)).toEqual(expected);
        // The Insights spelling, read back by RE2 itself (Java reads the same syntax).
        const portable = emitRegex(ast!, PORTABLE_REGEX);
        if (portable !== undefined)
          expect(rows.filter((r) => RE2JS.compile(portable).test(r.message)).map((r) => r.id)).toEqual(expected);
      }),
      { numRuns: 600, seed: 6000 },
    );
    expect(translated).toBeGreaterThan(300);
  });
});

describe('what a request can make the database do (issue 8)', () => {
  it('pushes a regex only as its required literals: every row the regex matches passes the prefilter, in process and in SQL', async () => {
    await loadRows(rowSet(7000));
    let withLiterals = 0;
    await fc.assert(
      fc.asyncProperty(regexArb, fc.boolean(), async (source, caseSensitive) => {
        const leaf = { kind: 'text', op: 'regex', value: source, caseSensitive } as const;
        const prefilter = regexPrefilter(leaf);
        if (prefilter.kind !== 'all') withLiterals++;
        const exact = exactIds(leaf);
        expect(exactIds(prefilter)).toEqual(expect.arrayContaining(exact));
        expect(await sqlIds(compileSqlFilter(prefilter))).toEqual(expect.arrayContaining(exact));
        // Only strpos: never a regex, never a case-folding bracket.
        expect(compileSqlFilter(prefilter).compile(db).sql).not.toMatch(/~/);
      }),
      { numRuns: 400, seed: 7100 },
    );
    expect(withLiterals).toBeGreaterThan(20);
  });

  it('finds the required literals of a catastrophic regex', () => {
    expect(regexPrefilter({ kind: 'text', op: 'regex', value: '(.{0,30}){30}x' })).toEqual({
      kind: 'or',
      nodes: [
        { kind: 'text', op: 'contains', value: 'X', caseSensitive: true },
        { kind: 'text', op: 'contains', value: 'x', caseSensitive: true },
      ],
    });
    expect(regexPrefilter({ kind: 'text', op: 'regex', value: 'a+b|c' })).toEqual({ kind: 'all' });
  });

  const deepPath = Array.from({ length: 128 }, () => 'a').join('.');
  const bomb: FilterNode = {
    kind: 'field',
    path: deepPath,
    op: 'in',
    value: [...Array.from({ length: 40 }, (_, i) => i), ...Array.from({ length: 12 }, (_, i) => `v${i}`)],
  };

  it('compiles a 128-segment path and a 52-value "in" to a handful of parameters', () => {
    const size = sqlSize(compileSqlFilter(bomb));
    expect(size.params).toBeLessThanOrEqual(10);
  });

  it('keeps any tree within the bounds, relaxing soundly: SQL returns a superset, exact after the in-process pass', async () => {
    await loadRows(rowSet(7200));
    const bounds = { maxParams: 5, maxBytes: 1200 };
    let relaxedTrees = 0;
    await fc.assert(
      fc.asyncProperty(treeArb, async (tree) => {
        const plan = planFilter(tree, sqlCapabilities);
        const { where, relaxed } = compileBoundedSqlFilter(plan.pushed, bounds);
        if (relaxed > 0) relaxedTrees++;
        const size = sqlSize(where);
        expect(size.params).toBeLessThanOrEqual(bounds.maxParams);
        expect(size.bytes).toBeLessThanOrEqual(bounds.maxBytes);
        const got = await sqlIds(where);
        const exact = exactIds(tree);
        expect(got).toEqual(expect.arrayContaining(exact));
        expect(rows.filter((r) => got.includes(r.id) && matches(plan.effective, r)).map((r) => r.id)).toEqual(exact);
      }),
      { numRuns: 300, seed: 7300 },
    );
    expect(relaxedTrees).toBeGreaterThan(30);
  });

  it('relaxes a wide tree of parameter bombs under and/or/not into a statement within the bounds', async () => {
    const wide: FilterNode = {
      kind: 'or',
      nodes: [{ kind: 'not', node: bomb }, ...Array.from({ length: 200 }, () => bomb)],
    };
    const { where } = compileBoundedSqlFilter(wide, { maxParams: 100, maxBytes: 20_000 });
    const size = sqlSize(where);
    expect(size.params).toBeLessThanOrEqual(100);
    expect(size.bytes).toBeLessThanOrEqual(20_000);
    await sqlIds(where);
  });
});

describe('compileSqlFilter edge cases', () => {
  const cases: Array<[string, FilterNode, string[]]> = [
    [
      'numbers compare as doubles: 0.10000000000000001 equals 0.1',
      { kind: 'field', path: 'n', op: 'eq', value: 0.1 },
      ['{"n": 0.1}', '{"n": 0.10000000000000001}'],
    ],
    [
      '1e400 is Infinity, above every finite number',
      { kind: 'field', path: 'n', op: 'gt', value: 1.7976931348623157e308 },
      ['{"n": 1e400}'],
    ],
    ['-1e400 is -Infinity', { kind: 'field', path: 'n', op: 'lt', value: -1e308 }, ['{"n": -1e400}']],
    [
      '1e-400 is 0, and -0 equals 0',
      { kind: 'field', path: 'n', op: 'eq', value: 0 },
      ['{"n": 0}', '{"n": -0}', '{"n": 1e-400}'],
    ],
    [
      '2^53+1 rounds to 2^53',
      { kind: 'field', path: 'n', op: 'eq', value: 9007199254740992 },
      ['{"n": 9007199254740993}'],
    ],
    ['a string never equals a number', { kind: 'field', path: 'n', op: 'eq', value: '1' }, ['{"n": "1"}']],
    [
      'neq is false when the field is missing or the message is not JSON',
      { kind: 'field', path: 'n', op: 'neq', value: 1 },
      [
        '{"n": "1"}',
        '{"n": null}',
        '{"n": [1]}',
        '{"n": 0.1}',
        '{"n": 0.10000000000000001}',
        '{"n": 1e400}',
        '{"n": -1e400}',
        '{"n": 0}',
        '{"n": -0}',
        '{"n": 1e-400}',
        '{"n": 9007199254740993}',
      ],
    ],
    [
      'contains on an array is element equality, on a string a substring',
      { kind: 'field', path: 'n', op: 'contains', value: 1 },
      ['{"n": [1]}'],
    ],
    [
      'strings order by code point (U+10400 after U+FFFD)',
      { kind: 'field', path: 's', op: 'gt', value: '\uFFFD' },
      ['{"s": "𐐀"}'],
    ],
    [
      'case-insensitive contains folds the Kelvin sign and long s',
      { kind: 'text', op: 'contains', value: 'kss' },
      ['\u212A\u017Fs', 'KSS'],
    ],
    ['case-insensitive equals folds final sigma', { kind: 'text', op: 'equals', value: 'σ' }, ['ς', 'Σ']],
    ['case-sensitive contains is exact', { kind: 'text', op: 'contains', value: 'K', caseSensitive: true }, ['KSS']],
    ['a path through an array is missing', { kind: 'field', path: 'a.b', op: 'exists' }, ['{"a": {"b": null}}']],
  ];
  const messages = [
    '{"n": 0.1}',
    '{"n": 0.10000000000000001}',
    '{"n": 1e400}',
    '{"n": -1e400}',
    '{"n": 0}',
    '{"n": -0}',
    '{"n": 1e-400}',
    '{"n": 9007199254740993}',
    '{"n": "1"}',
    '{"n": null}',
    '{"n": [1]}',
    '{"s": "𐐀"}',
    '{"s": "\uFFFD"}',
    '{"a": [{"b": 1}]}',
    '{"a": {"b": null}}',
    '\u212A\u017Fs',
    'KSS',
    'ς',
    'Σ',
    'ß',
    'n: 1',
  ];

  beforeAll(async () => {
    await loadRows(messages.map((message) => ({ message, level: 'INFO', logStream: 's' })));
  });

  it.each(cases)('%s', async (_name, filter, expected) => {
    const want = expected.map((m) => messages.indexOf(m)).sort((a, b) => a - b);
    expect(exactIds(filter)).toEqual(want);
    expect(await sqlIds(compileSqlFilter(filter))).toEqual(want);
  });

  it('handles a 1024-character case-insensitive value', async () => {
    const filter: FilterNode = { kind: 'text', op: 'contains', value: 'ks'.repeat(512) };
    expect(await sqlIds(compileSqlFilter(filter))).toEqual([]);
  });

  it('qualifies columns when given a table alias', async () => {
    const where = compileSqlFilter({ kind: 'stream', op: 'equals', value: 's' }, { logStream: 'e.log_stream' });
    const result = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events e WHERE ${where}`.execute(db);
    expect(result.rows[0]!.n).toBe(messages.length);
  });

  it('never compiles a user regex, not even one inside the portable subset', () => {
    expect(() => compileSqlFilter({ kind: 'text', op: 'regex', value: '\\bdisk\\b' })).toThrow(/plan the filter first/);
    expect(() => compileSqlFilter({ kind: 'text', op: 'regex', value: 'disk' })).toThrow(/plan the filter first/);
  });
});
