import type { FilterNode, FilterScalar } from '../../../src/core/filter-tree/schema.js';

/** formatFilterText: the one-line spelling of a filter tree; the syntax is described in filter-text.ts. */

export type FieldOp = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'exists' | 'in';
export const OPS: Record<string, FieldOp> = {
  '=': 'eq',
  '!=': 'neq',
  '>': 'gt',
  '>=': 'gte',
  '<': 'lt',
  '<=': 'lte',
  '*=': 'contains',
  ':exists': 'exists',
  ':in(': 'in',
};
const SPELL = Object.fromEntries(Object.entries(OPS).map(([k, v]) => [v, k])) as Record<FieldOp, string>;
/** A JSON number, as the one-line syntax reads a bare field value. */
export const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const BARE_TEXT = /^[\p{L}\p{N}_][\p{L}\p{N}_./#-]*$/u;
const BARE_VALUE = /^[\p{L}\p{N}_./:@+-]+$/u;
const BARE_STREAM = /^[^\s()"*]+$/;
const KEYWORDS = new Set(['OR', 'AND', 'NOT']);

function quote(value: string): string {
  return JSON.stringify(value);
}

function scalar(value: FilterScalar): string | undefined {
  if (typeof value === 'number')
    return Number.isFinite(value) ? (Object.is(value, -0) ? '-0' : String(value)) : undefined;
  if (typeof value !== 'string') return String(value);
  const bare = BARE_VALUE.test(value) && !NUMBER.test(value) && !['true', 'false', 'null'].includes(value);
  return bare ? value : quote(value);
}

/** `/src/` when the parser reads exactly `src` back, else `~"src"`. */
function regexSpelling(source: string): string {
  let i = 0;
  while (i < source.length && source.charAt(i) !== '/' && source.charCodeAt(i) >= 0x20)
    i += source.charAt(i) === '\\' ? 2 : 1;
  return i === source.length ? `/${source}/` : `~${quote(source)}`;
}

function leaf(node: FilterNode): string | undefined {
  switch (node.kind) {
    case 'text': {
      const flag = node.caseSensitive === undefined ? '' : node.caseSensitive ? 'c' : 'i';
      if (node.op === 'regex') return regexSpelling(node.value) + flag;
      if (node.op === 'contains' && flag === '' && BARE_TEXT.test(node.value) && !KEYWORDS.has(node.value))
        return node.value;
      return `${node.op === 'equals' ? '=' : node.op === 'startsWith' ? '^' : ''}${quote(node.value)}${flag}`;
    }
    case 'level':
      return node.levels.length === 0 ? undefined : `level:${node.levels.join(',').toLowerCase()}`;
    case 'stream': {
      const bare = BARE_STREAM.test(node.value);
      const name = bare ? node.value : quote(node.value);
      return node.op === 'prefix' ? `stream:${node.value === '' ? '' : name}*` : `stream:${name}`;
    }
    case 'field': {
      const at = /^(level|stream)$/i.test(node.path) ? '@' : '';
      const head = `${at}${node.path}${SPELL[node.op]}`;
      if (node.op === 'exists') return head;
      if (node.op !== 'in') return join([scalar(node.value)], head, '');
      return node.value.length === 0 ? undefined : join(node.value.map(scalar), head, ')', ',');
    }
    default:
      return undefined;
  }
}

function join(parts: (string | undefined)[], before: string, after: string, sep = ' '): string | undefined {
  return parts.some((p) => p === undefined) ? undefined : `${before}${parts.join(sep)}${after}`;
}

function format(node: FilterNode, context: 'top' | 'and' | 'or' | 'not'): string | undefined {
  switch (node.kind) {
    case 'all':
      return context === 'top' ? '' : '*';
    case 'not': {
      const inner = format(node.node, 'not');
      return inner === undefined ? undefined : `-${inner}`;
    }
    case 'and':
    case 'or': {
      if (node.nodes.length < 2) return undefined;
      const inside = node.kind === 'and' ? context === 'and' || context === 'not' : context !== 'top';
      const parts = node.nodes.map((child) => format(child, node.kind));
      return join(parts, inside ? '(' : '', inside ? ')' : '', node.kind === 'and' ? ' ' : ' OR ');
    }
    default:
      return leaf(node);
  }
}

/** The one-line spelling of `filter`, or undefined when it has none (see the comment above). */
export function formatFilterText(filter: FilterNode): string | undefined {
  return format(filter, 'top');
}
