import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFilter } from '../../src/core/filter-tree/parse.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { invalidRegex } from '../../ui/src/lib/filter-regex.js';
import { formatFilterText, parseFilterText } from '../../ui/src/lib/filter-text.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';

const text = (value: string, extra: object = {}): FilterNode => ({ kind: 'text', op: 'contains', value, ...extra });

function parsed(line: string): FilterNode {
  const result = parseFilterText(line);
  if (!result.ok) throw new Error(`${line}: ${result.error} at ${result.at}`);
  return result.filter;
}

/** Tricky on purpose: keywords, syntax characters, quotes, backslashes, white space, non-ASCII. */
const { treeArb } = filterArbitraries({
  words: ['timeout', 'OR', 'NOT', 'AND', 'or', '-x', '*', 'a=b', 'level:error', 'stream:x', '(', ')', 'é', 'Σ'],
  fragments: ['', ' ', 'a b', '"q"', 'back\\slash', 'tab\there', '@x', '/', 'c', '𝒳'],
  strings: ['', 'x', '42', 'true', 'null', '-1', 'a,b', 'a b', '(x)', '"', 'http://h/p', '1e5', '+5', 'Infinity'],
  numbers: [0, -0, 1, -1, 42, 0.5, 1e21, -2.5e-7, 500],
  fieldPaths: ['status', 'user.id', 'level', 'stream', 'Level', 'a-b', '_x.y_z', 'OR', 'NOT'],
  streams: ['', 'web/1', 'web/', 'a b', 'a*', '*', '"q"', 'x,y'],
  regex: {
    source: fc.constantFrom('', 'a/b', 'x\\/y', '^err', '[0-9]+', '\\\\', 'a"b', '\\d{3}', 'a\\', '(?i)x', '/'),
    nonSubset: ['(a)|b', '.*'],
    sourceWeight: 5,
  },
});

function hasShortGroup(node: FilterNode): boolean {
  if (node.kind === 'not') return hasShortGroup(node.node);
  if (node.kind === 'and' || node.kind === 'or') return node.nodes.length < 2 || node.nodes.some(hasShortGroup);
  return false;
}

describe('parseFilterText', () => {
  it.each<[string, FilterNode]>([
    ['', { kind: 'all' }],
    ['   ', { kind: 'all' }],
    ['*', { kind: 'all' }],
    ['timeout', text('timeout')],
    ['"connection reset"', text('connection reset')],
    ['"Foo"c', text('Foo', { caseSensitive: true })],
    ['"foo"i', text('foo', { caseSensitive: false })],
    ['="exact"', { kind: 'text', op: 'equals', value: 'exact' }],
    ['^"GET /"', { kind: 'text', op: 'startsWith', value: 'GET /' }],
    ['/a\\/b+/c', { kind: 'text', op: 'regex', value: 'a\\/b+', caseSensitive: true }],
    ['~"a/b"', { kind: 'text', op: 'regex', value: 'a/b' }],
    ['level:error,WARN', { kind: 'level', levels: ['ERROR', 'WARN'] }],
    ['stream:web/*', { kind: 'stream', op: 'prefix', value: 'web/' }],
    ['stream:web/1', { kind: 'stream', op: 'equals', value: 'web/1' }],
    ['stream:"a b"*', { kind: 'stream', op: 'prefix', value: 'a b' }],
    ['user.id=42', { kind: 'field', path: 'user.id', op: 'eq', value: 42 }],
    ['user.id="42"', { kind: 'field', path: 'user.id', op: 'eq', value: '42' }],
    ['status>=500', { kind: 'field', path: 'status', op: 'gte', value: 500 }],
    ['ok!=true', { kind: 'field', path: 'ok', op: 'neq', value: true }],
    ['tags*=red', { kind: 'field', path: 'tags', op: 'contains', value: 'red' }],
    ['user.name:exists', { kind: 'field', path: 'user.name', op: 'exists' }],
    ['code:in(500, "x",null)', { kind: 'field', path: 'code', op: 'in', value: [500, 'x', null] }],
    ['@level:exists', { kind: 'field', path: 'level', op: 'exists' }],
    ['a b', { kind: 'and', nodes: [text('a'), text('b')] }],
    ['a AND b', { kind: 'and', nodes: [text('a'), text('b')] }],
    ['a b OR c', { kind: 'or', nodes: [{ kind: 'and', nodes: [text('a'), text('b')] }, text('c')] }],
    ['-(a OR b)', { kind: 'not', node: { kind: 'or', nodes: [text('a'), text('b')] } }],
    ['NOT a', { kind: 'not', node: text('a') }],
    ['--a', { kind: 'not', node: { kind: 'not', node: text('a') } }],
    ['(a b) c', { kind: 'and', nodes: [{ kind: 'and', nodes: [text('a'), text('b')] }, text('c')] }],
    ['or not', { kind: 'and', nodes: [text('or'), text('not')] }],
    ['http://h/p', text('http://h/p')],
  ])('%s', (line, filter) => {
    expect(parsed(line)).toEqual(filter);
    expect(parseFilter(filter)).toEqual(filter);
  });

  it.each<[string, number, RegExp]>([
    ['(a', 2, /expected '\)'/],
    ['a)', 1, /unexpected '\)'/],
    ['()', 1, /expected a term/],
    ['"x', 0, /unterminated/],
    ['"\\q"', 0, /invalid quoted string/],
    ['/x', 0, /unterminated regex/],
    ['a OR', 4, /expected a term/],
    ['AND a', 0, /AND needs/],
    ['a AND AND b', 6, /AND needs/],
    ['- a', 0, /right after '-'/],
    ['NOT', 0, /after NOT/],
    ['level:bad', 6, /expected a level/],
    ['level:error,error', 12, /repeated/],
    ['level:exists', 6, /expected a level/],
    ['a="x"y', 5, /expected a space/],
    ['a=', 2, /expected a value/],
    ['a>true', 2, /needs a number or a string/],
    ['code:in(1,', 10, /expected a value/],
    ['code:in(1 2)', 10, /expected ','/],
    ['@x', 1, /JSON field/],
    ['=x', 1, /quoted string/],
    ['stream:', 7, /stream name/],
  ])('%s is an error at %d', (line, at, message) => {
    const result = parseFilterText(line);
    expect(result).toMatchObject({ ok: false, at });
    expect(result.ok ? '' : result.error).toMatch(message);
  });

  it('never throws, and what it accepts from a small alphabet, with regexes RE2 compiles, the API accepts', async () => {
    const line = fc
      .array(
        fc.constantFrom(
          'a',
          'B',
          ' ',
          '(',
          ')',
          '"',
          '-',
          '=',
          '^',
          '/',
          '*',
          ':',
          ',',
          'OR',
          'NOT',
          '@x',
          'level:',
          'stream:',
          'in(',
          'c',
          '\\',
        ),
        { maxLength: 12 },
      )
      .map((parts) => parts.join(''));
    let refusedRegexes = 0;
    await fc.assert(
      fc.asyncProperty(line, async (l) => {
        const result = parseFilterText(l);
        if (!result.ok) {
          expect(result.at).toBeGreaterThanOrEqual(0);
          expect(result.at).toBeLessThanOrEqual(l.length);
          return;
        }
        // The filter bar refuses what RE2 refuses before it sends anything; the API refuses exactly those too.
        const bad = await invalidRegex(result.filter);
        if (bad === undefined) expect(parseFilter(result.filter)).toEqual(result.filter);
        else {
          refusedRegexes++;
          expect(() => parseFilter(result.filter)).toThrow(/RE2/);
        }
      }),
      // Regexes RE2 refuses, besides the random lines (which seldom hold one).
      { numRuns: 3000, examples: [['/(/'], ['/in(/ OR x'], ['-/[a/']] },
    );
    expect(refusedRegexes).toBeGreaterThanOrEqual(3);
  });
});

describe('formatFilterText', () => {
  it.each<[FilterNode, string]>([
    [{ kind: 'all' }, ''],
    [{ kind: 'not', node: { kind: 'all' } }, '-*'],
    [text('OR'), '"OR"'],
    [text('a b', { caseSensitive: true }), '"a b"c'],
    [{ kind: 'text', op: 'regex', value: 'a/b' }, '~"a/b"'],
    [{ kind: 'field', path: 'stream', op: 'exists' }, '@stream:exists'],
    [{ kind: 'field', path: 'n', op: 'eq', value: '42' }, 'n="42"'],
    [{ kind: 'field', path: 'n', op: 'in', value: [1, 'a b', false] }, 'n:in(1,"a b",false)'],
    [{ kind: 'stream', op: 'prefix', value: '' }, 'stream:*'],
    [{ kind: 'stream', op: 'prefix', value: 'a*' }, 'stream:"a*"*'],
    [
      {
        kind: 'and',
        nodes: [
          { kind: 'or', nodes: [text('a'), text('b')] },
          { kind: 'level', levels: ['ERROR'] },
        ],
      },
      '(a OR b) level:error',
    ],
  ])('%j is %s', (filter, line) => {
    expect(formatFilterText(filter)).toBe(line);
  });

  it('has no spelling for a group of one, nor an empty group', () => {
    expect(formatFilterText({ kind: 'and', nodes: [text('a')] })).toBeUndefined();
    expect(formatFilterText({ kind: 'not', node: { kind: 'or', nodes: [] } })).toBeUndefined();
  });

  it('round-trips: parseFilterText(formatFilterText(t)) deep-equals t, for every tree but short groups', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        const line = formatFilterText(tree);
        expect(line === undefined).toBe(hasShortGroup(tree));
        if (line === undefined) return;
        const result = parseFilterText(line);
        expect(result).toEqual({ ok: true, filter: tree });
        expect(formatFilterText(parseFilter(tree))).toBe(line);
      }),
      { numRuns: 3000 },
    );
  });
});
