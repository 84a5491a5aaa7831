import type { FilterNode } from '../../../src/core/filter-tree/schema.js';
import { LEVELS, type Level } from '../../../src/core/log-level.js';

/*
 * The level facet edits one predicate of the filter: the level condition at its top (the filter itself, or a
 * direct child of its top-level AND). Everything else in the filter is kept as it is.
 */

type LevelNode = Extract<FilterNode, { kind: 'level' }>;

/** The levels the filter's top-level level condition allows; undefined when it has none. */
export function filterLevels(filter: FilterNode): Level[] | undefined {
  if (filter.kind === 'level') return filter.levels;
  if (filter.kind === 'and') return filter.nodes.find((n): n is LevelNode => n.kind === 'level')?.levels;
  return undefined;
}

/**
 * `filter` with `level` added to or taken out of its top-level level condition: one is added (ANDed) when there is
 * none, and removed when its last level goes.
 */
export function toggleLevel(filter: FilterNode, level: Level): FilterNode {
  const current = filterLevels(filter);
  const levels = current?.includes(level) ? current.filter((l) => l !== level) : [...(current ?? []), level];
  const node: LevelNode | undefined =
    levels.length === 0 ? undefined : { kind: 'level', levels: LEVELS.filter((l) => levels.includes(l)) };
  if (filter.kind === 'all' || filter.kind === 'level') return node ?? { kind: 'all' };
  if (filter.kind === 'and' && current !== undefined) {
    const i = filter.nodes.findIndex((n) => n.kind === 'level');
    const nodes =
      node === undefined ? filter.nodes.filter((_, j) => j !== i) : filter.nodes.map((n, j) => (j === i ? node : n));
    return nodes.length === 1 ? nodes[0]! : { kind: 'and', nodes };
  }
  if (node === undefined) return filter;
  return filter.kind === 'and'
    ? { kind: 'and', nodes: [...filter.nodes, node] }
    : { kind: 'and', nodes: [filter, node] };
}

/** Rows per level over every bucket of a histogram. */
export function levelTotals(buckets: readonly { counts: Record<string, number> }[]): Partial<Record<Level, number>> {
  const out: Partial<Record<Level, number>> = {};
  for (const b of buckets)
    for (const [level, c] of Object.entries(b.counts)) out[level as Level] = (out[level as Level] ?? 0) + c;
  return out;
}

/** Rows per level of a list of rows. */
export function rowLevels(rows: readonly { level: string }[]): Partial<Record<Level, number>> {
  const out: Partial<Record<Level, number>> = {};
  for (const r of rows) out[r.level as Level] = (out[r.level as Level] ?? 0) + 1;
  return out;
}
