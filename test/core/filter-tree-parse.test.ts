import type { Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { parseFilter } from '../../src/core/filter-tree/parse.js';
import { FilterNodeSchema, type FilterNode } from '../../src/core/filter-tree/schema.js';

function faultsOf(input: unknown, path?: string): string[] {
  try {
    parseFilter(input, path);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    expect(e.code).toBe('logs:filter:invalid');
    expect(e.status).toBe(400);
    expect(e.details).toHaveLength(1);
    expect(e.details![0]!.render).toBe('list');
    return e.details![0]!.items!;
  }
  throw new Error('expected parseFilter to throw');
}

function chain(depth: number): unknown {
  let node: unknown = { kind: 'all' };
  for (let i = 1; i < depth; i++) node = { kind: 'not', node };
  return node;
}

describe('parseFilter', () => {
  it('accepts every node kind and returns a clean copy', () => {
    const input = {
      kind: 'and',
      nodes: [
        { kind: 'all' },
        {
          kind: 'or',
          nodes: [
            { kind: 'level', levels: ['ERROR', 'FATAL'] },
            { kind: 'stream', op: 'prefix', value: 'web/' },
          ],
        },
        { kind: 'not', node: { kind: 'text', op: 'regex', value: 'time(out|d out)', caseSensitive: true } },
        { kind: 'field', path: 'http.status', op: 'gte', value: 500 },
        { kind: 'field', path: 'user_id', op: 'exists' },
        { kind: 'field', path: 'tags', op: 'in', value: ['a', 1, true, null] },
        { kind: 'text', op: 'contains', value: 'disk full' },
      ],
    };
    const parsed = parseFilter(structuredClone(input));
    expect(parsed).toEqual(input);
    expect(Value.Check(FilterNodeSchema, parsed)).toBe(true);
  });

  it('names each fault by its JSON path', () => {
    const faults = faultsOf({
      kind: 'and',
      nodes: [
        { kind: 'level', levels: ['ERROR', 'LOUD'] },
        { kind: 'not', node: { kind: 'text', op: 'contains', value: 42 } },
        { kind: 'field', path: '1abc', op: 'eq', value: 'x' },
        { kind: 'stream', op: 'suffix', value: 'x', extra: true },
        { kind: 'wat' },
        'nope',
      ],
    });
    expect(faults).toEqual([
      'filter.nodes[0].levels[1]: must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, UNKNOWN',
      'filter.nodes[1].node.value: must be a string',
      expect.stringMatching(/^filter\.nodes\[2\]\.path: must be dot-separated JSON keys/),
      'filter.nodes[3].extra: is not allowed in a "stream" node',
      'filter.nodes[3].op: must be one of equals, prefix',
      'filter.nodes[4].kind: must be one of all, and, or, not, level, text, field, stream',
      'filter.nodes[5]: must be an object',
    ]);
  });

  it('uses the path it is given as the root', () => {
    expect(faultsOf({ kind: 'not' }, 'body.filter')).toEqual(['body.filter.node: is required']);
  });

  it.each(
    [
      [{}, 'filter.kind: is required'],
      [null, 'filter: must be an object'],
      [[], 'filter: must be an object'],
      [{ kind: 'all', nodes: [] }, 'filter.nodes: is not allowed in a "all" node'],
      [{ kind: 'and' }, 'filter.nodes: is required'],
      [{ kind: 'or', nodes: [] }, 'filter.nodes: must hold at least one node'],
      [{ kind: 'or', nodes: {} }, 'filter.nodes: must be an array of filter nodes'],
      [{ kind: 'level', levels: [] }, 'filter.levels: must hold at least one level'],
      [{ kind: 'level', levels: ['INFO', 'INFO'] }, 'filter.levels[1]: repeats an earlier level'],
      [{ kind: 'level', levels: 'INFO' }, 'filter.levels: must be an array of levels'],
      [{ kind: 'text', value: 'x' }, 'filter.op: is required'],
      [{ kind: 'text', op: 'contains' }, 'filter.value: is required'],
      [{ kind: 'text', op: 'contains', value: 'x', caseSensitive: 'yes' }, 'filter.caseSensitive: must be a boolean'],
      [{ kind: 'text', op: 'like', value: 'x' }, 'filter.op: must be one of contains, equals, startsWith, regex'],
      [
        { kind: 'text', op: 'regex', value: 'a(' },
        'filter.value: is not a valid RE2 regular expression (error parsing regexp: missing closing ): `a(`)',
      ],
      [
        { kind: 'text', op: 'regex', value: '(?=a)' },
        expect.stringMatching(/^filter\.value: is not a valid RE2 regular expression/),
      ],
      [{ kind: 'text', op: 'regex', value: 'a'.repeat(513) }, 'filter.value: must be at most 512 characters'],
      [{ kind: 'text', op: 'contains', value: 'a'.repeat(1025) }, 'filter.value: must be at most 1024 characters'],
      [{ kind: 'text', op: 'contains', value: 'a\u0000' }, 'filter.value: must not contain the character U+0000'],
      [
        { kind: 'text', op: 'contains', value: 'a\uD800' },
        'filter.value: must be well-formed Unicode (it has a lone surrogate)',
      ],
      [{ kind: 'field', op: 'exists' }, 'filter.path: is required'],
      [{ kind: 'field', path: 'a', op: 'exists', value: 1 }, 'filter.value: is not allowed with op "exists"'],
      [{ kind: 'field', path: 'a', op: 'eq' }, 'filter.value: is required'],
      [
        { kind: 'field', path: 'a', op: 'eq', value: { b: 1 } },
        'filter.value: must be a string, number, boolean or null',
      ],
      [{ kind: 'field', path: 'a', op: 'gt', value: true }, 'filter.value: must be a string or a number'],
      [
        { kind: 'field', path: 'a', op: 'in', value: 'x' },
        'filter.value: must be an array of 1 to 100 strings, numbers, booleans or nulls',
      ],
      [
        { kind: 'field', path: 'a', op: 'in', value: [] },
        'filter.value: must be an array of 1 to 100 strings, numbers, booleans or nulls',
      ],
      [
        { kind: 'field', path: 'a', op: 'in', value: ['x', [1]] },
        'filter.value[1]: must be a string, number, boolean or null',
      ],
      [{ kind: 'field', path: 'a.', op: 'exists' }, expect.stringMatching(/^filter\.path: must be dot-separated/)],
      [{ kind: 'field', path: 'a..b', op: 'exists' }, expect.stringMatching(/^filter\.path: must be dot-separated/)],
      [{ kind: 'field', path: 'a.0', op: 'exists' }, expect.stringMatching(/^filter\.path: must be dot-separated/)],
      [
        { kind: 'field', path: 'a', op: 'like', value: 1 },
        'filter.op: must be one of eq, neq, gt, gte, lt, lte, exists, in, contains',
      ],
      [{ kind: 'stream', op: 'equals', value: 'x'.repeat(513) }, 'filter.value: must be at most 512 characters'],
      [{ kind: 'all', 'odd key': 1 }, 'filter["odd key"]: is not allowed in a "all" node'],
    ].map(([input, fault]) => ({ input, fault, label: JSON.stringify(input).slice(0, 80) })),
  )('rejects $label', ({ input, fault }) => {
    expect(faultsOf(input)).toEqual([fault]);
  });

  it('accepts paths with underscores and dashes', () => {
    expect(parseFilter({ kind: 'field', path: '_a.b-c.d_1', op: 'exists' })).toEqual({
      kind: 'field',
      path: '_a.b-c.d_1',
      op: 'exists',
    });
  });

  it('reads only own properties', () => {
    const inherited = Object.create({ node: { kind: 'all' } }) as Record<string, unknown>;
    inherited.kind = 'not';
    expect(faultsOf(inherited)).toEqual(['filter.node: is required']);
  });

  it('accepts 16 levels of nesting and rejects 17', () => {
    expect(() => parseFilter(chain(16))).not.toThrow();
    const faults = faultsOf(chain(17));
    expect(faults).toEqual([`filter${'.node'.repeat(16)}: the filter is nested deeper than 16 levels`]);
  });

  it('rejects a 100,000-deep input without exhausting the stack', () => {
    const faults = faultsOf(chain(100_000));
    expect(faults).toHaveLength(1);
    expect(faults[0]).toMatch(/nested deeper than 16 levels$/);
  });

  it('accepts 256 nodes and rejects 257', () => {
    const leaves = (n: number) => Array.from({ length: n }, () => ({ kind: 'all' }));
    expect(() => parseFilter({ kind: 'and', nodes: leaves(255) })).not.toThrow();
    expect(faultsOf({ kind: 'and', nodes: leaves(256) })).toEqual([
      'filter.nodes[255]: the filter has more than 256 nodes',
    ]);
  });

  it('stops early on a 100,000-wide input', () => {
    const nodes = Array.from({ length: 100_000 }, () => ({ kind: 'bogus' }));
    const faults = faultsOf({ kind: 'or', nodes });
    expect(faults.length).toBeLessThanOrEqual(51);
    expect(faults.at(-1)).toBe('…and more problems not listed');
  });

  it('says how many problems there are in the message', () => {
    try {
      parseFilter({ kind: 'and', nodes: [{ kind: 'x' }, { kind: 'y' }] });
    } catch (error) {
      expect((error as AppError).message).toBe(
        'The filter is invalid: filter.nodes[0].kind: must be one of all, and, or, not, level, text, field, stream (2 problems).',
      );
    }
  });
});

/** Random JSON-ish values shaped like filter nodes, valid or not, at most a few levels deep. */
const nearlyNode: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constantFrom('all', 'nope') }),
    fc.record({ kind: fc.constantFrom('and', 'or'), nodes: fc.array(tie('node'), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('not'), node: tie('node') }, { requiredKeys: ['kind'] }),
    fc.record({
      kind: fc.constant('level'),
      levels: fc.array(fc.constantFrom('INFO', 'ERROR', 'LOUD'), { maxLength: 3 }),
    }),
    fc.record(
      {
        kind: fc.constant('text'),
        op: fc.constantFrom('contains', 'equals', 'startsWith', 'regex', 'like'),
        value: fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('a(', '[a-z]+'), fc.integer()),
        caseSensitive: fc.oneof(fc.boolean(), fc.constant('no')),
      },
      { requiredKeys: ['kind'] },
    ),
    fc.record(
      {
        kind: fc.constant('field'),
        path: fc.constantFrom('a', 'a.b', '1a', 'a-b._c', ''),
        op: fc.constantFrom('eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists', 'in', 'contains', 'near'),
        value: fc.oneof(
          fc.string({ maxLength: 3 }),
          fc.integer(),
          fc.boolean(),
          fc.constant(null),
          fc.array(fc.integer(), { maxLength: 2 }),
          fc.constant({}),
        ),
      },
      { requiredKeys: ['kind'] },
    ),
    fc.record(
      {
        kind: fc.constant('stream'),
        op: fc.constantFrom('equals', 'prefix', 'suffix'),
        value: fc.string({ maxLength: 3 }),
        extra: fc.integer(),
      },
      {
        requiredKeys: ['kind'],
      },
    ),
  ),
})).node;

function hasInvalidRegex(input: unknown): boolean {
  if (input === null || typeof input !== 'object') return false;
  const node = input as Record<string, unknown>;
  if (node.kind === 'text' && node.op === 'regex' && typeof node.value === 'string') {
    try {
      RE2JS.compile(node.value);
    } catch {
      return true;
    }
  }
  return Object.values(node).some((v) => (Array.isArray(v) ? v.some(hasInvalidRegex) : hasInvalidRegex(v)));
}

function parses(input: unknown): FilterNode | undefined {
  try {
    return parseFilter(input);
  } catch {
    return undefined;
  }
}

describe('parseFilter and FilterNodeSchema', () => {
  it('describe the same type', () => {
    // Checked by tsc: the hand-written FilterNode and the schema's Static type are assignable both ways.
    const fromSchema = (x: Static<typeof FilterNodeSchema>): FilterNode => x;
    const toSchema = (x: FilterNode): Static<typeof FilterNodeSchema> => x;
    expect(toSchema(fromSchema({ kind: 'all' }))).toEqual({ kind: 'all' });
  });

  it('agree on small random inputs, and a parsed filter always satisfies the schema', () => {
    // Inputs avoid what only the parser can check (regex syntax, well-formed strings, limits).
    const schemaChecks = (input: unknown) => Value.Check(FilterNodeSchema, input);
    fc.assert(
      fc.property(nearlyNode, (input) => {
        const parsed = parses(input);
        const regexInvalid = hasInvalidRegex(input);
        const unicodeIssue = /[\uD800-\uDFFF\u0000]/.test(JSON.stringify(input));
        if (parsed) expect(schemaChecks(parsed)).toBe(true);
        if (!regexInvalid && !unicodeIssue) expect(parsed !== undefined).toBe(schemaChecks(input));
      }),
      { numRuns: 2000 },
    );
  });
});
