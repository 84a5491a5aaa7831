// Case-insensitive text in SQL (issue 20): `compileSqlFilter` folds the message with `lower(… COLLATE "C")` and
// `replace`, never a regex, and must agree with `matches` (simple case folding, case-fold.ts) on PGlite and, when
// TEST_DATABASE_URL is set, on PostgreSQL too — on characters whose case the databases' own `lower()` treats
// otherwise (İ, ı, ß/ẞ, final sigma, the Kelvin sign, long s, astral letters, combining marks).
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { Kysely, PostgresDialect, sql, type RawBuilder } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalString, foldClass, foldString, sqlFoldPairs } from '../../src/core/filter-tree/case-fold.js';
import {
  MAX_LEAF_FOLD_CHARS,
  MAX_STATEMENT_FOLD_CHARS,
  canPushToSql,
  compileBoundedSqlFilter,
  compileSqlFilter,
  foldPrefilter,
  sqlCapabilities,
  sqlSize,
} from '../../src/core/filter-tree/compile-sql.js';
import { matches } from '../../src/core/filter-tree/evaluate.js';
import { parseFilter } from '../../src/core/filter-tree/parse.js';
import { planFilter } from '../../src/core/filter-tree/plan.js';
import type { FilterNode, TextNode } from '../../src/core/filter-tree/schema.js';
import { onPostgres } from '../support/database.js';

/** Characters whose case is easy to get wrong, and a few whose SQL spelling is (quotes, LIKE wildcards, backslash). */
const TRICKY = [
  'a',
  'A',
  'e',
  'E',
  'x',
  'k',
  'K',
  '\u212A', // KELVIN SIGN: folds to k
  's',
  'S',
  '\u017F', // LONG S: folds to s
  'i',
  'I',
  '\u0130', // İ: simple folding keeps it apart (lower() makes it i or i̇)
  '\u0131', // ı: its uppercase is I, but it does not fold to i
  '\u0307', // COMBINING DOT ABOVE (i̇ = i + U+0307)
  '\u0301', // COMBINING ACUTE
  'ß',
  '\u1E9E', // ẞ: folds to ß (not to ss)
  'Σ',
  'σ',
  'ς',
  'Ά',
  'ά',
  'Θ',
  'θ',
  'ϑ',
  'ϴ',
  'µ', // MICRO SIGN: folds to μ
  'Μ',
  'μ',
  'Å',
  'å',
  '\u212B', // ANGSTROM SIGN
  'Ω',
  'ω',
  '\u2126', // OHM SIGN
  'Ǆ',
  'ǅ',
  'ǆ',
  'Ж',
  'ж',
  'Ё',
  'ё',
  '𐐀',
  '𐐨',
  '😀',
  'é',
  'É',
  '1',
  ' ',
  '%',
  '_',
  '\\',
  "'",
  '"',
  '\n',
];

const message = fc.array(fc.constantFrom(...TRICKY), { maxLength: 14 }).map((cs) => cs.join(''));

interface Row {
  id: number;
  message: string;
}

interface Target {
  name: string;
  db: Kysely<any>;
}

const targets: Target[] = [];
let rows: Row[] = [];

beforeAll(async () => {
  targets.push({ name: 'PGlite', db: new Kysely<any>({ dialect: new PGliteDialect(new PGlite()) }) });
  if (onPostgres) {
    // One connection: the table is temporary, seen by this session only.
    const pool = new pg.Pool({ connectionString: process.env.TEST_DATABASE_URL, max: 1 });
    targets.push({ name: 'PostgreSQL', db: new Kysely<any>({ dialect: new PostgresDialect({ pool }) }) });
  }
  for (const { db } of targets) {
    await sql`CREATE TEMPORARY TABLE events (id int PRIMARY KEY, message text NOT NULL, level text NOT NULL, log_stream text NOT NULL, json jsonb)`.execute(
      db,
    );
  }
  const messages = fc.sample(message, { numRuns: 400, seed: 2020 });
  // Spellings a value must match or tell apart, whatever the generator drew.
  messages.push('İstanbul', 'istanbul', 'i\u0307stanbul', 'ISTANBUL', 'ıstanbul', 'straße', 'STRASSE', 'STRAẞE');
  messages.push('KSS', '\u212A\u017Fs', 'ΣΊΣΥΦΟΣ', 'σίσυφος', 'σίσυφοσ', '𐐀𐐨', '𐐨𐐨', '', 'µ', 'Μ', 'Å', 'å');
  rows = messages.map((m, id) => ({ id, message: m }));
  for (const { db } of targets) {
    for (let i = 0; i < rows.length; i += 200) {
      const values = rows.slice(i, i + 200).map((r) => sql`(${r.id}, ${r.message}, 'INFO', 's', null)`);
      await sql`INSERT INTO events (id, message, level, log_stream, json) VALUES ${sql.join(values)}`.execute(db);
    }
  }
});

afterAll(async () => {
  for (const { db } of targets) await db.destroy();
});

const exactIds = (node: FilterNode) =>
  rows.filter((r) => matches(node, { message: r.message, level: 'INFO', logStream: 's' })).map((r) => r.id);

async function sqlIds(db: Kysely<any>, where: RawBuilder<boolean>): Promise<number[]> {
  const result = await sql<{ id: number }>`SELECT id FROM events WHERE ${where} ORDER BY id`.execute(db);
  return result.rows.map((r) => r.id);
}

/** Every database returns exactly the rows `matches` keeps. */
async function expectAgreement(node: FilterNode): Promise<number[]> {
  const exact = exactIds(node);
  const where = compileSqlFilter(node);
  for (const { name, db } of targets)
    expect({ on: name, ids: await sqlIds(db, where) }).toEqual({ on: name, ids: exact });
  return exact;
}

/** Another spelling of `s`: each character replaced by a member of its folding class, chosen by `picks`. */
function respell(s: string, picks: number[]): string {
  return [...s]
    .map((ch, i) => {
      const members = foldClass(ch.codePointAt(0)!);
      return String.fromCodePoint(members[(picks[i % picks.length] ?? 0) % members.length]!);
    })
    .join('');
}

const op = fc.constantFrom('contains' as const, 'equals' as const, 'startsWith' as const);
/** A value: drawn from the tricky characters, or a piece of a stored message respelled (so that it matches). */
const value = fc.oneof(
  fc.array(fc.constantFrom(...TRICKY), { minLength: 1, maxLength: 4 }).map((cs) => cs.join('')),
  fc
    .tuple(
      fc.nat(),
      fc.nat(),
      fc.nat({ max: 6 }),
      fc.array(fc.nat({ max: 3 }), { minLength: 1, maxLength: 5 }),
      fc.boolean(),
    )
    .map(([r, start, length, picks, whole]) => {
      const chars = [...rows[r % rows.length]!.message];
      const from = whole ? 0 : start % (chars.length + 1);
      return respell(chars.slice(from, whole ? chars.length : from + length).join(''), picks);
    }),
);
const leaf: fc.Arbitrary<TextNode> = fc
  .record({
    kind: fc.constant('text' as const),
    op,
    value,
    caseSensitive: fc.constantFrom(undefined, undefined, undefined, false, true),
  })
  .map((n) => (n.caseSensitive === undefined ? { kind: n.kind, op: n.op, value: n.value } : n));

describe(`case-insensitive text in SQL agrees with matches (${onPostgres ? 'PGlite and PostgreSQL' : 'PGlite'})`, () => {
  it('keeps İ apart from i and I, as simple folding does, where lower() and toLowerCase() do not', async () => {
    // JavaScript lowers İ to i + COMBINING DOT ABOVE; simple case folding (CaseFolding.txt C and S) has no entry for it.
    expect('\u0130'.toLowerCase()).toBe('i\u0307');
    expect(foldString('\u0130')).toBe('\u0130');
    expect(/^i$/iu.test('\u0130')).toBe(false);
    for (const { db } of targets) {
      // What the compiled filter relies on: lower() under "C" changes ASCII letters and nothing else.
      const nonAscii = TRICKY.filter((c) => c.codePointAt(0)! >= 0x80).join('');
      const lowered = await sql<{ l: string }>`SELECT lower(${`AZaz${nonAscii}`}::text COLLATE "C") AS l`.execute(db);
      expect(lowered.rows[0]!.l).toBe(`azaz${nonAscii}`);
    }
    // Agreement on every row, and these spellings kept (yes) or not (no).
    const keeps = async (node: FilterNode, yes: string[], no: string[]) => {
      const ids = await expectAgreement(node);
      const kept = (m: string) => ids.includes(rows.findIndex((r) => r.message === m));
      expect({ node, yes: yes.filter(kept), no: no.filter(kept) }).toEqual({ node, yes, no: [] });
    };
    const text = (op: TextNode['op'], value: string): FilterNode => ({ kind: 'text', op, value });
    await keeps(text('startsWith', 'İ'), ['İstanbul'], ['istanbul', 'i\u0307stanbul', 'ISTANBUL', 'ıstanbul']);
    await keeps(text('contains', 'İSTANBUL'), ['İstanbul'], ['istanbul', 'i\u0307stanbul', 'ISTANBUL', 'ıstanbul']);
    await keeps(text('startsWith', 'i'), ['istanbul', 'i\u0307stanbul', 'ISTANBUL'], ['İstanbul', 'ıstanbul']);
    await keeps(text('equals', 'istanbul'), ['istanbul', 'ISTANBUL'], ['İstanbul', 'i\u0307stanbul', 'ıstanbul']);
    await keeps(text('equals', 'ıSTANBUL'), ['ıstanbul'], ['istanbul', 'ISTANBUL', 'İstanbul']);
    await keeps(text('equals', 'strasse'), ['STRASSE'], ['straße', 'STRAẞE']);
    await keeps(text('equals', 'STRAßE'), ['straße', 'STRAẞE'], ['STRASSE']);
    await keeps(text('equals', 'kſS'), ['KSS', '\u212A\u017Fs'], []);
    await keeps(text('equals', 'σίσυφος'), ['ΣΊΣΥΦΟΣ', 'σίσυφος', 'σίσυφοσ'], []);
    await keeps(text('equals', '𐐀𐐀'), ['𐐀𐐨', '𐐨𐐨'], []);
    await keeps(text('equals', 'μ'), ['µ', 'Μ'], []);
    await keeps(text('equals', '\u212B'), ['Å', 'å'], []);
  });

  it('one leaf: contains, equals, startsWith on tricky characters', async () => {
    let matched = 0;
    await fc.assert(
      fc.asyncProperty(leaf, async (node) => {
        if ((await expectAgreement(node)).length > 0) matched++;
      }),
      { numRuns: 500, seed: 2001 },
    );
    expect(matched).toBeGreaterThan(200);
  });

  it('several leaves sharing one folded message, under and/or/not', async () => {
    const tree: fc.Arbitrary<FilterNode> = fc.letrec<{ node: FilterNode }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', maxDepth: 3 },
        leaf,
        fc.record({
          kind: fc.constantFrom('and' as const, 'or' as const),
          nodes: fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
        }),
        fc.record({ kind: fc.constant('not' as const), node: tie('node') }),
      ),
    })).node;
    let shared = 0;
    await fc.assert(
      fc.asyncProperty(tree, async (node) => {
        if (compileSqlFilter(node).compile(targets[0]!.db).sql.includes('berth_fold')) shared++;
        await expectAgreement(node);
      }),
      { numRuns: 400, seed: 2002 },
    );
    expect(shared).toBeGreaterThan(100);
  });

  it('compiles no regex, and folds the message once for any number of leaves', () => {
    const wide: FilterNode = {
      kind: 'or',
      nodes: Array.from({ length: 60 }, (_, i) => ({
        kind: 'text' as const,
        op: 'contains' as const,
        value: `Disk ${i} full`,
      })),
    };
    const text = compileSqlFilter(wide).compile(targets[0]!.db).sql;
    expect(text).not.toMatch(/~/);
    expect(text.match(/lower\(/g)).toHaveLength(2); // the ASCII branch and the other
    expect(text.match(/replace\(/g)).toHaveLength(2); // ſ → s and K (Kelvin) → k, once
    expect(sqlSize(compileSqlFilter(wide)).params).toBe(60);
  });
});

describe('bounds of the folding', () => {
  /** Characters from `from` on, one per two-member class not used yet: a value of `n` replacements exactly. */
  const used = new Set<number>();
  const lettersFrom = (from: number, n: number) => {
    let out = '';
    for (let cp = from; sqlFoldPairs(out).size < n; cp++) {
      const members = foldClass(cp);
      if (members.length !== 2 || members.some((m) => m < 0x80 || used.has(m))) continue;
      members.forEach((m) => used.add(m));
      out += String.fromCodePoint(cp);
    }
    return out;
  };
  const cyrillicAndGreek = (n: number) => {
    used.clear();
    return lettersFrom(0x391, n);
  };

  it('pushes a leaf of up to MAX_LEAF_FOLD_CHARS replacements, applies a longer one in process behind a piece that fits', async () => {
    const fits: TextNode = { kind: 'text', op: 'contains', value: cyrillicAndGreek(MAX_LEAF_FOLD_CHARS) };
    const over: TextNode = { kind: 'text', op: 'contains', value: `${cyrillicAndGreek(MAX_LEAF_FOLD_CHARS + 1)}x` };
    expect(canPushToSql(fits)).toBe(true);
    expect(canPushToSql(over)).toBe(false);
    expect(canPushToSql({ ...over, caseSensitive: true })).toBe(true);
    const plan = planFilter(over, sqlCapabilities);
    expect(plan.exact).toBe(false);
    const prefilter = plan.pushed as TextNode;
    expect(prefilter.kind).toBe('text');
    expect(canPushToSql(prefilter)).toBe(true);
    expect(over.value).toContain(prefilter.value);
    expect(sqlFoldPairs(prefilter.value).size).toBe(MAX_LEAF_FOLD_CHARS);
    expect([...prefilter.value].length).toBe(MAX_LEAF_FOLD_CHARS + 1); // 48 letters and the x
    expect(foldPrefilter({ ...over, op: 'equals' })).toEqual({
      kind: 'text',
      op: 'startsWith',
      value: cyrillicAndGreek(MAX_LEAF_FOLD_CHARS),
    });
  });

  it('every prefilter is sound and pushable: each row a leaf matches, its prefilter matches', async () => {
    const wide = fc
      .array(fc.constantFrom(...TRICKY, ...cyrillicAndGreek(80)), { minLength: 1, maxLength: 120 })
      .map((cs) => cs.join(''));
    await fc.assert(
      fc.asyncProperty(op, wide, fc.array(fc.nat({ max: 3 }), { minLength: 1, maxLength: 7 }), async (o, v, picks) => {
        const node: TextNode = { kind: 'text', op: o, value: v };
        const prefilter = foldPrefilter(node);
        expect(canPushToSql(prefilter as TextNode)).toBe(true);
        for (const m of [v, respell(v, picks), `x${respell(v, picks)}y`, respell(v, picks).slice(1)]) {
          const row = { message: m, level: 'INFO' as const, logStream: 's' };
          if (matches(node, row)) expect(matches(prefilter, row)).toBe(true);
        }
      }),
      { numRuns: 300, seed: 2003 },
    );
  });

  it('relaxes leaves until the statement folds at most MAX_STATEMENT_FOLD_CHARS characters', async () => {
    // Four leaves of 48 replacements each, no two sharing a class: 192 together.
    used.clear();
    const blocks = [0x391, 0x410, 0x531, 0x10a0].map((base, i) => `${lettersFrom(base, MAX_LEAF_FOLD_CHARS)} Tag-${i}`);
    const nodes = blocks.map((v): TextNode => ({ kind: 'text', op: 'contains', value: v }));
    expect(nodes.every(canPushToSql)).toBe(true);
    const tree: FilterNode = { kind: 'or', nodes };
    const { where, relaxed } = compileBoundedSqlFilter(tree, { maxParams: 2_000, maxBytes: 256 * 1024 });
    expect(relaxed).toBeGreaterThan(0);
    const compiled = where.compile(targets[0]!.db);
    expect(compiled.sql.match(/replace\(/g)?.length ?? 0).toBeLessThanOrEqual(MAX_STATEMENT_FOLD_CHARS);
    // A relaxed leaf gives way to the piece of its value that needs no replace, not to TRUE.
    expect(compiled.parameters.filter((p) => typeof p === 'string' && /^ tag-\d$/.test(p))).toHaveLength(relaxed);
    // Sound: a superset of the rows (a relaxed leaf under no `not` gives way to a weaker one).
    for (const { db } of targets) expect(await sqlIds(db, where)).toEqual(expect.arrayContaining(exactIds(tree)));
  });

  it('spells each class by its lowercase member (the value side of the comparison)', () => {
    expect(canonicalString('KSS\u212A\u017FΣΣς İI ẞ')).toBe('kssksσσσ İi ß');
    expect(parseFilter({ kind: 'text', op: 'contains', value: 'İ' })).toEqual({
      kind: 'text',
      op: 'contains',
      value: 'İ',
    });
  });
});
