// fast-check arbitraries for filter trees (every node kind), drawn from a vocabulary the test passes
// in: normally the vocabulary of its own generated rows, so that predicates match some rows.
import fc from 'fast-check';
import { RE2JS } from 're2js';
import type { FilterLeaf, FilterNode, FilterScalar } from '../../src/core/filter-tree/schema.js';
/**
 * The levels of docs/design.md#2-log-query, written out: the reliability suite uses these arbitraries and must not
 * load src/ at run time.
 */
const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'UNKNOWN'] as const;

export interface FilterVocabulary {
  /** Text values: one of these words or fragments, or up to three words joined. */
  words: readonly string[];
  /** Further whole text values (pieces that cut across words, ''). */
  fragments: readonly string[];
  /** Field values: these strings, these numbers, booleans and null. */
  strings: readonly string[];
  numbers: readonly number[];
  /** Dotted field paths. */
  fieldPaths: readonly string[];
  /** Stream names and prefixes. */
  streams: readonly string[];
  regex: {
    /** Sources the test generates (mostly inside the pushable regex subset). */
    source: fc.Arbitrary<string>;
    /** Sources outside every pushable subset, drawn once for every `sourceWeight` generated ones. */
    nonSubset: readonly string[];
    sourceWeight: number;
    /** Longer sources are dropped (as are those RE2 does not compile). */
    maxLength?: number;
  };
}

export interface FilterArbitraries {
  regexArb: fc.Arbitrary<string>;
  textValue: fc.Arbitrary<string>;
  filterScalar: fc.Arbitrary<FilterScalar>;
  fieldPath: fc.Arbitrary<string>;
  leafArb: fc.Arbitrary<FilterLeaf>;
  treeArb: fc.Arbitrary<FilterNode>;
}

export function filterArbitraries(vocabulary: FilterVocabulary): FilterArbitraries {
  const { words, fragments, strings, numbers, fieldPaths, streams, regex } = vocabulary;
  const maxRegexLength = regex.maxLength ?? Infinity;

  const regexArb = fc
    .oneof(
      { weight: regex.sourceWeight, arbitrary: regex.source },
      { weight: 1, arbitrary: fc.constantFrom(...regex.nonSubset) },
    )
    .filter((r) => {
      try {
        RE2JS.compile(r);
        return r.length <= maxRegexLength;
      } catch {
        return false;
      }
    });

  const textValue = fc.oneof(
    fc.constantFrom(...words, ...fragments),
    fc.array(fc.constantFrom(...words), { maxLength: 3 }).map((w) => w.join('')),
  );
  const filterScalar: fc.Arbitrary<FilterScalar> = fc.oneof(
    fc.constantFrom(...strings),
    fc.constantFrom(...numbers),
    fc.constantFrom(true, false, null),
  );
  const fieldPath = fc.constantFrom(...fieldPaths);

  const leafArb: fc.Arbitrary<FilterLeaf> = fc.oneof(
    fc.subarray([...LEVELS], { minLength: 1 }).map((levels) => ({ kind: 'level' as const, levels })),
    fc.record(
      {
        kind: fc.constant('text' as const),
        op: fc.constantFrom('contains' as const, 'equals' as const, 'startsWith' as const),
        value: textValue,
        caseSensitive: fc.boolean(),
      },
      { requiredKeys: ['kind', 'op', 'value'] },
    ),
    fc.record(
      {
        kind: fc.constant('text' as const),
        op: fc.constant('regex' as const),
        value: regexArb,
        caseSensitive: fc.boolean(),
      },
      { requiredKeys: ['kind', 'op', 'value'] },
    ),
    fc.record({ kind: fc.constant('field' as const), path: fieldPath, op: fc.constant('exists' as const) }),
    fc.record({
      kind: fc.constant('field' as const),
      path: fieldPath,
      op: fc.constantFrom('eq' as const, 'neq' as const, 'contains' as const),
      value: filterScalar,
    }),
    fc.record({
      kind: fc.constant('field' as const),
      path: fieldPath,
      op: fc.constantFrom('gt' as const, 'gte' as const, 'lt' as const, 'lte' as const),
      value: filterScalar.filter((v): v is string | number => typeof v === 'string' || typeof v === 'number'),
    }),
    fc.record({
      kind: fc.constant('field' as const),
      path: fieldPath,
      op: fc.constant('in' as const),
      value: fc.array(filterScalar, { minLength: 1, maxLength: 4 }),
    }),
    fc.record({
      kind: fc.constant('stream' as const),
      op: fc.constantFrom('equals' as const, 'prefix' as const),
      value: fc.constantFrom(...streams),
    }),
  );

  const treeArb: fc.Arbitrary<FilterNode> = fc.letrec<{ node: FilterNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', maxDepth: 4, withCrossShrink: true },
      leafArb,
      fc.constant({ kind: 'all' as const }),
      fc.record({
        kind: fc.constantFrom('and' as const, 'or' as const),
        nodes: fc.array(tie('node'), { minLength: 1, maxLength: 3 }),
      }),
      fc.record({ kind: fc.constant('not' as const), node: tie('node') }),
    ),
  })).node;

  return { regexArb, textValue, filterScalar, fieldPath, leafArb, treeArb };
}
