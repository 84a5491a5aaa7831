import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileFilterPattern } from '../../src/core/filter-pattern/index.js';
import { matches, type FilterRow } from '../../src/core/filter-tree/evaluate.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { LEVELS, parseJsonMessage } from '../../src/core/log-level.js';
import { splitForTail, streamSelection, type StreamSelection } from '../../ui/src/lib/tail-filter.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';

const WORDS = ['Error', 'error', 'ERROR', '500', '/api/', 'a b', 'x"y', 'back\\slash', ' pad', 'É', 'é', 'ǅ', 'ß', '-'];
const STREAMS = ['web/1', 'web/2', 'web/', 'web/1/x', 'api/1', 'w', '', 'a,b', ' sp'];

const { treeArb } = filterArbitraries({
  words: WORDS,
  fragments: ['', ' ', 'rror', '"'],
  strings: ['Error', '5', ''],
  numbers: [5, 500],
  fieldPaths: ['a', 'msg'],
  streams: STREAMS,
  regex: { source: fc.constantFrom('rr', '^E', '[0-9]+'), nonSubset: ['(a)|b'], sourceWeight: 3 },
});

/** Mostly top-level ANDs of what the split may translate, so the properties exercise it. */
const conjunctArb: fc.Arbitrary<FilterNode> = fc.oneof(
  treeArb,
  fc.record({
    kind: fc.constant('text' as const),
    op: fc.constant('contains' as const),
    value: fc.constantFrom(...WORDS),
    caseSensitive: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('stream' as const),
    op: fc.constantFrom('equals' as const, 'prefix' as const),
    value: fc.constantFrom(...STREAMS),
  }),
);
const filterArb: fc.Arbitrary<FilterNode> = fc.oneof(
  treeArb,
  conjunctArb,
  fc
    .array(
      fc.oneof(
        conjunctArb,
        conjunctArb.map((node) => ({ kind: 'not' as const, node })),
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((nodes) => ({ kind: 'and' as const, nodes })),
  fc.array(conjunctArb, { minLength: 1, maxLength: 3 }).map((nodes) => ({ kind: 'or' as const, nodes })),
);

const messageArb = fc.oneof(
  fc.array(fc.constantFrom(...WORDS, ' ', 'ok'), { maxLength: 5 }).map((w) => w.join('')),
  fc.constantFrom('{"a":5,"msg":"Error"}', '{"a":"5"}', '{"msg":"error 500","b":"\\u0000"}', ' {"a":"Error"}'),
);
const rowArb = fc.record({
  message: messageArb,
  level: fc.constantFrom(...LEVELS),
  logStream: fc.constantFrom(...STREAMS),
});
const row = (r: { message: string; level: FilterRow['level']; logStream: string }): FilterRow => ({
  ...r,
  json: parseJsonMessage(r.message),
});

const cs = (value: string): FilterNode => ({ kind: 'text', op: 'contains', value, caseSensitive: true });
const ci = (value: string): FilterNode => ({ kind: 'text', op: 'contains', value });
const level: FilterNode = { kind: 'level', levels: ['ERROR'] };

describe('splitForTail', () => {
  it.each<[FilterNode, string, FilterNode]>([
    [{ kind: 'and', nodes: [cs('Error'), { kind: 'not', node: cs('x y') }, level] }, '"Error" -"x y"', level],
    [{ kind: 'and', nodes: [ci('500'), { kind: 'and', nodes: [ci('#4-2'), level] }] }, '"500" "#4-2"', level],
    [{ kind: 'or', nodes: [cs('a'), ci('5')] }, '?"a" ?"5"', { kind: 'all' }],
    [{ kind: 'and', nodes: [level, { kind: 'or', nodes: [cs('a'), ci('5')] }] }, '?"a" ?"5"', level],
    [ci('error'), '', ci('error')],
    [{ kind: 'not', node: cs('x') }, '', { kind: 'not', node: cs('x') }],
    [cs('say "hi"'), '', cs('say "hi"')],
    [cs(' pad'), '', cs(' pad')],
    [cs(''), '', cs('')],
    [{ kind: 'field', path: 'a', op: 'eq', value: 'x' }, '', { kind: 'field', path: 'a', op: 'eq', value: 'x' }],
    [{ kind: 'all' }, '', { kind: 'all' }],
  ])('%j', (filter, filterPattern, residual) => {
    expect(splitForTail(filter)).toEqual({ filterPattern, residual, browserOnly: residual.kind !== 'all' });
  });

  it('keeps the pattern within 1024 characters', () => {
    const filter: FilterNode = { kind: 'and', nodes: Array.from({ length: 40 }, (_, i) => cs(`${i}`.padEnd(40, 'x'))) };
    const { filterPattern, residual } = splitForTail(filter);
    expect(filterPattern.length).toBeLessThanOrEqual(1024);
    expect(residual.kind === 'and' && residual.nodes.length).toBe(40 - 23);
    expect(filterPattern.length + 43).toBeGreaterThan(1024);
  });

  it('the pattern and the residual together select exactly what the filter does', () => {
    let translated = 0;
    fc.assert(
      fc.property(filterArb, fc.array(rowArb, { minLength: 1, maxLength: 20 }), (filter, rows) => {
        const split = splitForTail(filter);
        if (split.filterPattern !== '') translated++;
        expect(split.browserOnly).toBe(split.residual.kind !== 'all');
        const pattern = compileFilterPattern(split.filterPattern);
        for (const r of rows.map(row)) {
          expect(pattern(r.message) && matches(split.residual, r)).toBe(matches(filter, r));
        }
      }),
      { numRuns: 3000 },
    );
    expect(translated).toBeGreaterThan(200);
  });

  it('does not translate JSON field equality: the pattern and the tree disagree on these events', () => {
    const eq = (value: string): FilterNode => ({ kind: 'field', path: 'a', op: 'eq', value });
    const event = (message: string) => row({ message, level: 'INFO', logStream: 's' });
    // A number's text equals the string operand…
    expect(compileFilterPattern('{ $.a = "5" }')('{"a":5}')).toBe(true);
    expect(matches(eq('5'), event('{"a":5}'))).toBe(false);
    // …and the pattern parses JSON the filter treats as text.
    const nul = '{"a":"x","b":"\\u0000"}';
    expect(compileFilterPattern('{ $.a = "x" }')(nul)).toBe(true);
    expect(matches(eq('x'), event(nul))).toBe(false);
  });
});

function selects(selection: StreamSelection, stream: string): boolean {
  if (selection.logStreamNames !== undefined && selection.logStreamNames.length > 0)
    return selection.logStreamNames.includes(stream);
  return selection.logStreamPrefix ? stream.startsWith(selection.logStreamPrefix) : true;
}

describe('streamSelection', () => {
  const prefix = (value: string): FilterNode => ({ kind: 'stream', op: 'prefix', value });
  const equals = (value: string): FilterNode => ({ kind: 'stream', op: 'equals', value });

  it.each<[FilterNode, StreamSelection, StreamSelection, FilterNode]>([
    [{ kind: 'and', nodes: [prefix('web/'), level] }, {}, { logStreamPrefix: 'web/' }, level],
    [prefix('web/1'), { logStreamPrefix: 'web/' }, { logStreamPrefix: 'web/1' }, { kind: 'all' }],
    [prefix('w'), { logStreamPrefix: 'web/' }, { logStreamPrefix: 'web/' }, { kind: 'all' }],
    [prefix('api/'), { logStreamPrefix: 'web/' }, { logStreamPrefix: 'web/' }, prefix('api/')],
    [
      { kind: 'or', nodes: [equals('web/1'), equals('api/1')] },
      { logStreamPrefix: 'web/' },
      { logStreamNames: ['web/1'] },
      { kind: 'all' },
    ],
    [prefix('web/'), { logStreamNames: ['web/1', 'api/1'] }, { logStreamNames: ['web/1'] }, { kind: 'all' }],
    [equals('a,b'), {}, {}, equals('a,b')],
    [level, { logStreamPrefix: 'x' }, { logStreamPrefix: 'x' }, level],
  ])('%j within %j', (filter, base, selection, residual) => {
    expect(streamSelection(filter, base)).toEqual({ selection, residual });
  });

  it('the selection and the residual together select exactly what the filter does, within the base', () => {
    const baseArb: fc.Arbitrary<StreamSelection> = fc.oneof(
      fc.constant({}),
      fc.constantFrom('web/', 'web/1', 'w').map((p) => ({ logStreamPrefix: p })),
      fc
        .subarray(
          STREAMS.filter((s) => s !== ''),
          { minLength: 1 },
        )
        .map((n) => ({ logStreamNames: n })),
    );
    let narrowed = 0;
    fc.assert(
      fc.property(filterArb, baseArb, rowArb, (filter, base, r) => {
        const { selection, residual } = streamSelection(filter, base);
        if (residual !== filter) narrowed++;
        expect(Object.keys(selection).length).toBeLessThanOrEqual(1);
        for (const logStream of STREAMS.filter((s) => selects(base, s))) {
          const e = row({ ...r, logStream });
          expect(selects(selection, logStream) && matches(residual, e)).toBe(matches(filter, e));
        }
        for (const s of STREAMS) if (selects(selection, s)) expect(selects(base, s)).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(narrowed).toBeGreaterThan(250);
  });
});
