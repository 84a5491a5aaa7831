import { describe, expect, it } from 'vitest';
import { capabilitiesFor } from '../../src/core/filter-tree/capabilities.js';
import { planFilter, simplifyFilter, type FilterCapabilities } from '../../src/core/filter-tree/plan.js';
import { FALSE, TRUE, type FilterLeaf, type FilterNode } from '../../src/core/filter-tree/schema.js';

const level: FilterNode = { kind: 'level', levels: ['ERROR'] };
const regex: FilterNode = { kind: 'text', op: 'regex', value: 'disk' };
const word: FilterNode = { kind: 'text', op: 'contains', value: 'disk', caseSensitive: true };
const stream: FilterNode = { kind: 'stream', op: 'prefix', value: 'web/' };

/** Pushes stream and text contains; applies level in process; can do nothing with a regex. */
const backend: FilterCapabilities = {
  backend: 'Test Logs',
  canPush: (leaf: FilterLeaf) => leaf.kind === 'stream' || (leaf.kind === 'text' && leaf.op === 'contains'),
  canApplyInProcess: (leaf: FilterLeaf) => !(leaf.kind === 'text' && leaf.op === 'regex'),
};

describe('planFilter', () => {
  it('keeps a filter the backend pushes whole', () => {
    const filter: FilterNode = { kind: 'and', nodes: [word, stream] };
    expect(planFilter(filter, backend)).toEqual({ effective: filter, pushed: filter, unsupported: [], exact: true });
  });

  it('drops an unsupported leaf to TRUE and names it', () => {
    const filter: FilterNode = { kind: 'and', nodes: [stream, regex] };
    const plan = planFilter(filter, backend);
    expect(plan.effective).toEqual({ kind: 'and', nodes: [stream, TRUE] });
    expect(plan.pushed).toEqual(stream);
    expect(plan.unsupported).toEqual(['filter.nodes[1]: a regex match on the message is not supported by Test Logs']);
    expect(plan.exact).toBe(true);
  });

  it('drops to FALSE under one not, so the result still widens', () => {
    const filter: FilterNode = { kind: 'and', nodes: [stream, { kind: 'not', node: regex }] };
    const plan = planFilter(filter, backend);
    expect(plan.effective).toEqual({ kind: 'and', nodes: [stream, { kind: 'not', node: FALSE }] });
    expect(plan.pushed).toEqual(stream);
    expect(plan.unsupported).toEqual([
      'filter.nodes[1].node: a regex match on the message is not supported by Test Logs',
    ]);
  });

  it('drops to TRUE under two nots', () => {
    const filter: FilterNode = { kind: 'or', nodes: [stream, { kind: 'not', node: { kind: 'not', node: regex } }] };
    const plan = planFilter(filter, backend);
    expect(plan.effective).toEqual({ kind: 'or', nodes: [stream, { kind: 'not', node: { kind: 'not', node: TRUE } }] });
    expect(plan.pushed).toEqual(TRUE);
    expect(plan.unsupported).toEqual([
      'filter.nodes[1].node.node: a regex match on the message is not supported by Test Logs',
    ]);
  });

  it('applies in process what it cannot push, relaxing the pushed query', () => {
    const filter: FilterNode = { kind: 'and', nodes: [word, { kind: 'not', node: level }] };
    const plan = planFilter(filter, backend);
    expect(plan.effective).toEqual(filter);
    expect(plan.pushed).toEqual(word);
    expect(plan.unsupported).toEqual([]);
    expect(plan.exact).toBe(false);
  });

  it('relaxes a leaf under or to TRUE, which absorbs the or', () => {
    const plan = planFilter({ kind: 'or', nodes: [word, level] }, backend);
    expect(plan.pushed).toEqual(TRUE);
    expect(plan.exact).toBe(false);
  });

  it('reports every dropped leaf, with the root path it is given', () => {
    const plan = planFilter(
      { kind: 'or', nodes: [regex, { kind: 'and', nodes: [word, regex] }] },
      backend,
      'body.filter',
    );
    expect(plan.unsupported).toEqual([
      'body.filter.nodes[0]: a regex match on the message is not supported by Test Logs',
      'body.filter.nodes[1].nodes[1]: a regex match on the message is not supported by Test Logs',
    ]);
    expect(plan.pushed).toEqual(TRUE);
  });

  it('plans for Insights: level in process, everything else pushed when exact', () => {
    const filter: FilterNode = {
      kind: 'and',
      nodes: [level, word, { kind: 'field', path: 'status', op: 'gte', value: 500 }],
    };
    const plan = planFilter(filter, capabilitiesFor('insights'));
    expect(plan.unsupported).toEqual([]);
    expect(plan.effective).toEqual(filter);
    expect(plan.pushed).toEqual(word);
    expect(plan.exact).toBe(false);
  });

  it('plans for the local store: everything pushed but regexes, which run in process behind their required literals', () => {
    const local = capabilitiesFor('local');
    const plan = planFilter(
      { kind: 'and', nodes: [level, { kind: 'text', op: 'regex', value: 'disk (full|gone)' }] },
      local,
    );
    expect(plan).toMatchObject({ exact: false, unsupported: [] });
    // Case-insensitive: every exact spelling of the longest piece with at most 4 of them ("isk " has k, K and the Kelvin sign).
    const spellings = ['DI', 'Di', 'dI', 'di'].map((value) => ({
      kind: 'text',
      op: 'contains',
      value,
      caseSensitive: true,
    }));
    expect(plan.pushed).toEqual({ kind: 'and', nodes: [level, { kind: 'or', nodes: spellings }] });
    const exact = planFilter({ kind: 'text', op: 'regex', value: 'disk (full|gone)', caseSensitive: true }, local);
    expect(exact.pushed).toEqual({ kind: 'text', op: 'contains', value: 'disk ', caseSensitive: true });
    // A regex without a required literal leaves nothing for the database to look for.
    expect(
      planFilter({ kind: 'and', nodes: [level, { kind: 'text', op: 'regex', value: '\\bdisk\\b' }] }, local),
    ).toMatchObject({
      pushed: level,
      exact: false,
    });
    // Under a not, the regex relaxes to FALSE: not FALSE is TRUE, and the and keeps only the level.
    expect(
      planFilter(
        { kind: 'and', nodes: [level, { kind: 'not', node: { kind: 'text', op: 'regex', value: 'disk' } }] },
        local,
      ).pushed,
    ).toEqual(level);
  });
});

describe('simplifyFilter', () => {
  it.each<[string, FilterNode, FilterNode]>([
    ['not TRUE is FALSE', { kind: 'not', node: TRUE }, FALSE],
    ['not FALSE is TRUE', { kind: 'not', node: FALSE }, TRUE],
    ['double negation cancels', { kind: 'not', node: { kind: 'not', node: level } }, level],
    ['FALSE absorbs and', { kind: 'and', nodes: [level, FALSE] }, FALSE],
    ['TRUE absorbs or', { kind: 'or', nodes: [level, TRUE] }, TRUE],
    ['TRUE is dropped from and', { kind: 'and', nodes: [TRUE, level, TRUE] }, level],
    ['FALSE is dropped from or', { kind: 'or', nodes: [FALSE, level] }, level],
    ['an and of only TRUE is TRUE', { kind: 'and', nodes: [TRUE, TRUE] }, TRUE],
    ['an or of only FALSE is FALSE', { kind: 'or', nodes: [FALSE] }, FALSE],
    [
      'nested groups of one kind flatten',
      { kind: 'and', nodes: [level, { kind: 'and', nodes: [word, stream] }] },
      { kind: 'and', nodes: [level, word, stream] },
    ],
    [
      'constants fold from the leaves up',
      { kind: 'or', nodes: [{ kind: 'and', nodes: [level, { kind: 'not', node: TRUE }] }, stream] },
      stream,
    ],
  ])('%s', (_name, input, output) => {
    expect(simplifyFilter(input)).toEqual(output);
  });
});
