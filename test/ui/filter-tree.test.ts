import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFilter } from '../../src/core/filter-tree/parse.js';
import { planFilter, type FilterCapabilities } from '../../src/core/filter-tree/plan.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import {
  addNode,
  formatNodePath,
  getNode,
  insertNode,
  nodePaths,
  normalizeTree,
  parseNodePath,
  removeNode,
  replaceNode,
  unsupportedByPath,
  unwrapNode,
  validateForApi,
  withFieldOp,
  wrapNode,
} from '../../ui/src/lib/filter-tree.js';
import { filterArbitraries } from '../support/filter-arbitraries.js';

const a: FilterNode = { kind: 'text', op: 'contains', value: 'a' };
const b: FilterNode = { kind: 'level', levels: ['ERROR'] };
const c: FilterNode = { kind: 'stream', op: 'prefix', value: 'web/' };

const { treeArb, leafArb } = filterArbitraries({
  words: ['timeout', 'error'],
  fragments: ['', 'a b'],
  strings: ['x', ''],
  numbers: [0, 5],
  fieldPaths: ['status', 'user.id'],
  streams: ['web/1', ''],
  regex: { source: fc.constantFrom('a+', '^x', '[0-9]'), nonSubset: ['(a)|b'], sourceWeight: 3 },
});

type Edit = (tree: FilterNode, path: string) => FilterNode;
const edits: Record<string, (leaf: FilterNode) => Edit> = {
  replace: (leaf) => (t, p) => replaceNode(t, p, leaf),
  remove: () => (t, p) => removeNode(t, p),
  addAnd: (leaf) => (t, p) => addNode(t, p, leaf),
  addOr: (leaf) => (t, p) => addNode(t, p, leaf, 'or'),
  wrapAnd: () => (t, p) => wrapNode(t, p, 'and'),
  wrapOr: () => (t, p) => wrapNode(t, p, 'or'),
  wrapNot: () => (t, p) => wrapNode(t, p, 'not'),
  unwrap: () => (t, p) => unwrapNode(t, p),
  insertFirst: (leaf) => (t, p) => {
    const g = getNode(t, p);
    return g?.kind === 'and' || g?.kind === 'or' ? insertNode(t, p, leaf, 0) : t;
  },
};
/** Leaves the API refuses, as an editor holds them while the user types. */
const invalid = [
  { kind: 'text', op: 'regex', value: '(' },
  { kind: 'field', path: '1bad', op: 'exists' },
  { kind: 'level', levels: [] },
  { kind: 'field', path: 'x', op: 'in', value: [] },
] as FilterNode[];
const editArb = fc.record({
  name: fc.constantFrom(...Object.keys(edits)),
  leaf: fc.oneof({ weight: 9, arbitrary: leafArb }, { weight: 1, arbitrary: fc.constantFrom(...invalid) }),
  pick: fc.nat(),
});

function allNodes(tree: FilterNode): Set<FilterNode> {
  return new Set(nodePaths(tree).map((p) => getNode(tree, p)!));
}

describe('node paths', () => {
  it('parses and formats the API paths', () => {
    expect(parseNodePath('filter')).toEqual([]);
    expect(parseNodePath('filter.nodes[1].node.nodes[0]')).toEqual([1, 'node', 0]);
    expect(parseNodePath('filter.nodes[1].value')).toBeUndefined();
    expect(parseNodePath('filter.nodes')).toBeUndefined();
    expect(formatNodePath([1, 'node', 0])).toBe('filter.nodes[1].node.nodes[0]');
    const tree: FilterNode = { kind: 'and', nodes: [a, { kind: 'not', node: b }] };
    expect(nodePaths(tree)).toEqual(['filter', 'filter.nodes[0]', 'filter.nodes[1]', 'filter.nodes[1].node']);
    expect(getNode(tree, 'filter.nodes[1].node')).toBe(b);
    expect(getNode(tree, 'filter.nodes[2]')).toBeUndefined();
    expect(getNode(tree, 'filter.nodes[0].node')).toBeUndefined();
  });
});

describe('editing', () => {
  const tree: FilterNode = { kind: 'and', nodes: [a, { kind: 'not', node: b }] };

  it('replaces, removes, inserts, adds, wraps and unwraps', () => {
    expect(replaceNode(tree, 'filter.nodes[1].node', c)).toEqual({ kind: 'and', nodes: [a, { kind: 'not', node: c }] });
    expect(removeNode(tree, 'filter.nodes[0]')).toEqual({ kind: 'and', nodes: [{ kind: 'not', node: b }] });
    expect(removeNode(tree, 'filter.nodes[1].node')).toEqual({ kind: 'and', nodes: [a] });
    expect(removeNode(tree, 'filter')).toEqual({ kind: 'all' });
    expect(
      insertNode(tree, 'filter', c, 1).kind === 'and' &&
        (insertNode(tree, 'filter', c, 1) as { nodes: FilterNode[] }).nodes[1],
    ).toBe(c);
    expect(addNode(tree, 'filter.nodes[0]', c, 'or')).toEqual({
      kind: 'and',
      nodes: [
        { kind: 'or', nodes: [a, c] },
        { kind: 'not', node: b },
      ],
    });
    expect(addNode({ kind: 'all' }, 'filter', c)).toBe(c);
    expect(addNode(tree, 'filter', c)).toEqual({ kind: 'and', nodes: [a, { kind: 'not', node: b }, c] });
    expect(wrapNode(tree, 'filter.nodes[0]', 'not')).toEqual({
      kind: 'and',
      nodes: [
        { kind: 'not', node: a },
        { kind: 'not', node: b },
      ],
    });
    expect(unwrapNode(tree, 'filter.nodes[1]')).toEqual({ kind: 'and', nodes: [a, b] });
    expect(unwrapNode(tree, 'filter')).toBe(tree);
    expect(() => replaceNode(tree, 'filter.nodes[5]', c)).toThrow();
    expect(() => insertNode(tree, 'filter.nodes[0]', c)).toThrow(/not an and\/or group/);
  });

  it('changes a field operator and reshapes the value', () => {
    const eq = { kind: 'field', path: 'p', op: 'eq', value: true } as const;
    expect(withFieldOp(eq, 'in')).toEqual({ kind: 'field', path: 'p', op: 'in', value: [true] });
    expect(withFieldOp(eq, 'gt')).toEqual({ kind: 'field', path: 'p', op: 'gt', value: '' });
    expect(withFieldOp(eq, 'exists')).toEqual({ kind: 'field', path: 'p', op: 'exists' });
    expect(withFieldOp({ kind: 'field', path: 'p', op: 'in', value: [3, 4] }, 'lte')).toEqual({
      kind: 'field',
      path: 'p',
      op: 'lte',
      value: 3,
    });
    expect(withFieldOp({ kind: 'field', path: 'p', op: 'exists' }, 'neq')).toEqual({
      kind: 'field',
      path: 'p',
      op: 'neq',
      value: '',
    });
  });

  it('never changes an untouched node: every subtree off the edited path is kept, the same object', () => {
    fc.assert(
      fc.property(treeArb, editArb, (tree, { name, leaf, pick }) => {
        const paths = nodePaths(tree);
        const target = paths[pick % paths.length]!;
        const before = JSON.stringify(tree);
        const after = edits[name]!(leaf)(tree, target);
        expect(JSON.stringify(tree)).toBe(before); // immutable
        const kept = allNodes(after);
        for (const p of paths) {
          const onPath = target === p || target.startsWith(`${p}.`);
          const inside = p.startsWith(`${target}.`);
          if (onPath || (inside && name === 'replace') || (inside && name === 'remove')) continue;
          expect(kept.has(getNode(tree, p)!)).toBe(true);
          // Without index shifts, a kept node is also where it was.
          const group = ['and', 'or'].includes(getNode(tree, target)!.kind);
          if (name === 'replace' || (name.startsWith('add') && group)) expect(getNode(after, p)).toBe(getNode(tree, p));
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('validateForApi', () => {
  it('accepts exactly what parseFilter accepts, and what it sends is the tree itself', () => {
    const seen = { ok: 0, refused: 0 };
    fc.assert(
      fc.property(treeArb, fc.array(editArb, { maxLength: 8 }), (start, steps) => {
        let tree = start;
        for (const { name, leaf, pick } of steps) {
          const paths = nodePaths(tree);
          tree = edits[name]!(leaf)(tree, paths[pick % paths.length]!);
        }
        const result = validateForApi(tree);
        const normal = normalizeTree(tree);
        seen[result.ok ? 'ok' : 'refused']++;
        if (result.ok) {
          expect(result.filter).toEqual(normal);
          expect(parseFilter(JSON.parse(JSON.stringify(result.filter)))).toEqual(result.filter);
        } else {
          expect(() => parseFilter(normal)).toThrow();
          for (const path of result.problems.keys()) expect(getNode(tree, path)).toBeDefined();
        }
      }),
      { numRuns: 1000 },
    );
    expect(seen.ok).toBeGreaterThan(100);
    expect(seen.refused).toBeGreaterThan(50);
  });

  it('keeps a tree without empty groups as it is', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        expect(normalizeTree(tree)).toBe(tree);
      }),
      { numRuns: 300 },
    );
  });

  it('removes empty groups and names problems by the editor paths', () => {
    const tree: FilterNode = {
      kind: 'and',
      nodes: [
        { kind: 'or', nodes: [] },
        { kind: 'text', op: 'regex', value: '(' },
        { kind: 'not', node: { kind: 'and', nodes: [] } },
      ],
    };
    const result = validateForApi(tree);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect([...result.problems.keys()]).toEqual(['filter.nodes[1]']);
    expect(result.problems.get('filter.nodes[1]')![0]).toMatch(/^value: is not a valid RE2 regular expression/);
    expect(validateForApi({ kind: 'or', nodes: [{ kind: 'and', nodes: [] }] })).toEqual({
      ok: true,
      filter: { kind: 'all' },
    });
    expect(validateForApi({ kind: 'and', nodes: [a, { kind: 'or', nodes: [] }] })).toEqual({
      ok: true,
      filter: { kind: 'and', nodes: [a] },
    });
    expect(validateForApi({ kind: 'text', op: 'contains', value: 'x', caseSensitive: undefined })).toEqual({
      ok: true,
      filter: { kind: 'text', op: 'contains', value: 'x' },
    });
  });

  it('mirrors the API limits: depth 16, 256 nodes, regex 512 characters', () => {
    let deep: FilterNode = a;
    for (let i = 1; i < 16; i++) deep = { kind: 'not', node: deep };
    expect(validateForApi(deep).ok).toBe(true);
    const tooDeep = validateForApi({ kind: 'not', node: deep });
    expect(tooDeep.ok === false && [...tooDeep.problems.values()].flat().join()).toMatch(/deeper than 16/);
    const wide = (n: number): FilterNode => ({ kind: 'or', nodes: Array.from({ length: n - 1 }, () => a) });
    expect(validateForApi(wide(256)).ok).toBe(true);
    expect(validateForApi(wide(257)).ok).toBe(false);
    const regex = (n: number): FilterNode => ({ kind: 'text', op: 'regex', value: 'x'.repeat(n) });
    expect(validateForApi(regex(512)).ok).toBe(true);
    const long = validateForApi(regex(513));
    expect(long.ok === false && long.problems.get('filter')).toEqual(['value: must be at most 512 characters']);
  });
});

describe('unsupportedByPath', () => {
  it('files each reason of a real plan under the node it names', () => {
    const capabilities: FilterCapabilities = {
      backend: 'Test',
      canPush: () => false,
      canApplyInProcess: (leaf) => leaf.kind !== 'level',
    };
    fc.assert(
      fc.property(treeArb, (tree) => {
        const { unsupported } = planFilter(tree, capabilities);
        const byPath = unsupportedByPath(unsupported);
        const levels = nodePaths(tree).filter((p) => getNode(tree, p)!.kind === 'level');
        expect([...byPath.keys()].sort()).toEqual(levels.sort());
        for (const list of byPath.values()) expect(list).toEqual(['a level predicate is not supported by Test']);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps a reason naming no node whole under filter', () => {
    const map = unsupportedByPath(['filter.nodes[0].node: x', 'something else', 'filter: y']);
    expect(map).toEqual(
      new Map([
        ['filter.nodes[0].node', ['x']],
        ['filter', ['something else', 'y']],
      ]),
    );
  });
});
