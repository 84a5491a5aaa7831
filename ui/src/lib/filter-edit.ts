import { FIELD_PATH_PATTERN, FILTER_LIMITS } from '../../../src/core/filter-tree/limits.js';
import type { FilterNode, FilterScalar } from '../../../src/core/filter-tree/schema.js';

/** Conditions added from a row ("filter for this value") join the filter's top-level AND. */

const PATH = new RegExp(FIELD_PATH_PATTERN);
const same = (a: FilterNode, b: FilterNode) => JSON.stringify(a) === JSON.stringify(b);

/** `filter` AND `node`; unchanged when `node` is already one of its top-level conditions. */
export function andCondition(filter: FilterNode, node: FilterNode): FilterNode {
  if (filter.kind === 'all') return node;
  if (same(filter, node)) return filter;
  if (filter.kind === 'and')
    return filter.nodes.some((n) => same(n, node)) ? filter : { kind: 'and', nodes: [...filter.nodes, node] };
  return { kind: 'and', nodes: [filter, node] };
}

export interface MessageField {
  path: string;
  value: FilterScalar;
}

/**
 * The scalar fields of a JSON object message, by dotted path (nested objects followed, arrays not: a path has no
 * index), at most `max`; only those a field condition can name and compare. Nothing for a message that is not JSON.
 */
export function messageFields(message: string, max = 40): MessageField[] {
  const trimmed = message.trimStart();
  if (!trimmed.startsWith('{') || message.length > 100_000) return [];
  let json: unknown;
  try {
    json = JSON.parse(message);
  } catch {
    return [];
  }
  const out: MessageField[] = [];
  const walk = (value: unknown, path: string, depth: number) => {
    if (out.length >= max || depth > 4 || value === null || typeof value !== 'object' || Array.isArray(value)) return;
    for (const [key, v] of Object.entries(value)) {
      const p = path === '' ? key : `${path}.${key}`;
      if (!PATH.test(p) || p.length > FILTER_LIMITS.maxPathLength) continue;
      if (v !== null && typeof v === 'object') walk(v, p, depth + 1);
      else if (
        v === null ||
        typeof v === 'boolean' ||
        (typeof v === 'number' && Number.isFinite(v)) ||
        (typeof v === 'string' && v.length <= FILTER_LIMITS.maxValueLength)
      )
        out.push({ path: p, value: v });
      if (out.length >= max) return;
    }
  };
  walk(json, '', 0);
  return out;
}
