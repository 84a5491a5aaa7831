import { MAX_FILTER_PATTERN_LENGTH, parseFilterPattern } from '../../../src/core/filter-pattern/index.js';
import { hasCaseVariants } from '../../../src/core/filter-tree/case-fold.js';
import type { FilterNode, TextNode } from '../../../src/core/filter-tree/schema.js';

/*
 * Live tail (`GET /cloud/logs/stream`) takes a CloudWatch Logs filter pattern, not a filter tree. These
 * functions move to the stream's parameters only what certainly means the same, and leave the rest
 * (`residual`) to the browser, which applies it with `matches` (src/core/filter-tree/evaluate.ts) to rows whose
 * `json` is `parseJsonMessage(message)`. For every event of the stream:
 *
 *   matches(filter, e) === pattern(e.message) && matches(residual, e)
 *
 * Only conjuncts of the top-level AND (nested ANDs flattened) are translated, into an unstructured pattern
 * (src/core/filter-pattern/parse-text.ts: a term is a case-sensitive substring test):
 * - text `contains` that is case-sensitive, or whose value has no character with another case (`"500"`,
 *   `"/api/"`), becomes a required term `"value"`; under a `not`, an excluded term `-"value"` (only next to
 *   at least one required term); with neither, one OR of such leaves becomes optional terms `?"a" ?"b"`;
 * - only values that need no escape and that a term means literally: not empty, no `"` or `\`, no control
 *   character, no white space at either end (a blank term matches every event).
 * Not translated: JSON fields. `{ $.a = "x" }` is not `field a eq "x"`: the pattern's `=` compares a number's
 * text too (`5` = "5"), and its JSON parsing accepts messages the filter treats as text (a `\u0000` escape,
 * leading non-JSON white space); levels are derived by Berth; other text ops have no exact term.
 */

export interface TailSplit {
  /** For the stream's `filterPattern`; '' when nothing translates (then send none). */
  filterPattern: string;
  /** What the browser must still apply to every streamed event; `{kind: "all"}` when nothing is left. */
  residual: FilterNode;
  /** True when part of the filter is applied only in the browser (`residual` is not `all`): mark it so. */
  browserOnly: boolean;
}

function conjuncts(node: FilterNode): FilterNode[] {
  if (node.kind === 'all') return [];
  return node.kind === 'and' ? node.nodes.flatMap(conjuncts) : [node];
}

function and(nodes: FilterNode[]): FilterNode {
  return nodes.length === 0 ? { kind: 'all' } : nodes.length === 1 ? nodes[0]! : { kind: 'and', nodes };
}

/** The quoted term exactly equivalent to `node`, or undefined. */
function term(node: FilterNode): string | undefined {
  if (node.kind !== 'text' || node.op !== 'contains') return undefined;
  const { value } = node as TextNode;
  if (node.caseSensitive !== true && hasCaseVariants(value)) return undefined;
  if (value === '' || value.trim() !== value || /["\\\u0000-\u001f\u007f]/.test(value)) return undefined;
  return `"${value}"`;
}

/** Splits `filter` between a filter pattern for the stream and a residual for the browser (see above). */
export function splitForTail(filter: FilterNode): TailSplit {
  const parts = conjuncts(filter);
  const residual: FilterNode[] = [];
  const required: string[] = [];
  const excluded: { term: string; node: FilterNode }[] = [];
  let length = 0;
  const fits = (t: string) => length + t.length + 1 <= MAX_FILTER_PATTERN_LENGTH;
  for (const node of parts) {
    const t = term(node);
    const x = node.kind === 'not' ? term(node.node) : undefined;
    if (t !== undefined && fits(t)) {
      required.push(t);
      length += t.length + 1;
    } else if (x !== undefined && fits(`-${x}`)) {
      excluded.push({ term: `-${x}`, node });
      length += x.length + 2;
    } else residual.push(node);
  }
  let terms = required;
  if (required.length > 0) terms = [...required, ...excluded.map((e) => e.term)];
  else {
    residual.push(...excluded.map((e) => e.node));
    const i = residual.findIndex((n) => n.kind === 'or' && n.nodes.every((c) => term(c) !== undefined));
    const or = residual[i];
    const optional = or?.kind === 'or' ? or.nodes.map((c) => `?${term(c)}`) : [];
    if (optional.join(' ').length <= MAX_FILTER_PATTERN_LENGTH && optional.length > 0) {
      terms = optional;
      residual.splice(i, 1);
    }
  }
  const filterPattern = terms.join(' ');
  if (filterPattern === '' || !isValidPattern(filterPattern)) {
    return { filterPattern: '', residual: filter, browserOnly: filter.kind !== 'all' };
  }
  const rest = and(residual);
  return { filterPattern, residual: rest, browserOnly: rest.kind !== 'all' };
}

function isValidPattern(pattern: string): boolean {
  try {
    parseFilterPattern(pattern);
    return true;
  } catch {
    return false;
  }
}

/**
 * The streams a live tail reads: at most one of the two (the endpoint wants exactly one); neither, or a
 * prefix '', means every stream of the log groups.
 */
export interface StreamSelection {
  logStreamPrefix?: string;
  logStreamNames?: string[];
}

/** The endpoint's limits (src/http/routes/logs-stream.ts): names are split at commas and trimmed. */
const MAX_NAMES = 100;
const PRINTABLE = /^[^\u0000-\u001f\u007f\ud800-\udfff]+$/;
const nameOk = (v: string) => v.length <= 5000 && PRINTABLE.test(v) && !v.includes(',') && v.trim() === v;
const prefixOk = (v: string) => v.length <= 512 && PRINTABLE.test(v);

type Streams = { kind: 'all' } | { kind: 'prefix'; prefix: string } | { kind: 'names'; names: string[] };

function fromSelection(s: StreamSelection): Streams {
  if (s.logStreamNames !== undefined && s.logStreamNames.length > 0) return { kind: 'names', names: s.logStreamNames };
  return s.logStreamPrefix ? { kind: 'prefix', prefix: s.logStreamPrefix } : { kind: 'all' };
}

function within(streams: Streams, name: string): boolean {
  if (streams.kind === 'all') return true;
  return streams.kind === 'prefix' ? name.startsWith(streams.prefix) : streams.names.includes(name);
}

/** `current` narrowed by `node` when that is exact and expressible; undefined when `node` must stay residual. */
function narrow(current: Streams, node: FilterNode): Streams | undefined {
  if (node.kind === 'stream' && node.op === 'prefix') {
    const p = node.value;
    if (current.kind === 'names') {
      const names = current.names.filter((n) => n.startsWith(p));
      return names.length > 0 ? { kind: 'names', names } : undefined;
    }
    const q = current.kind === 'prefix' ? current.prefix : '';
    if (q.startsWith(p)) return current;
    return p.startsWith(q) && prefixOk(p) ? { kind: 'prefix', prefix: p } : undefined;
  }
  const equals = node.kind === 'or' ? node.nodes : [node];
  if (!equals.every((n) => n.kind === 'stream' && n.op === 'equals')) return undefined;
  const wanted = [...new Set(equals.map((n) => (n.kind === 'stream' ? n.value : '')))];
  const names = wanted.filter((n) => within(current, n));
  if (names.length === 0 || names.length > MAX_NAMES || !names.every(nameOk)) return undefined;
  return { kind: 'names', names };
}

/**
 * Moves the top-level AND's stream predicates (`stream` prefix or equals, or an OR of stream equals) into the
 * stream's selection, narrowing `base` (the view's own selection), when exactly equivalent. For every stream
 * name s that `base` selects: matches(filter, e) === selects(selection, s) && matches(residual, e), and
 * `selection` selects no stream `base` does not.
 */
export function streamSelection(
  filter: FilterNode,
  base: StreamSelection = {},
): { selection: StreamSelection; residual: FilterNode } {
  let current = fromSelection(base);
  const residual: FilterNode[] = [];
  const parts = conjuncts(filter);
  for (const node of parts) {
    const next = narrow(current, node);
    if (next === undefined) residual.push(node);
    else current = next;
  }
  if (residual.length === parts.length) return { selection: base, residual: filter };
  const selection: StreamSelection =
    current.kind === 'names'
      ? { logStreamNames: current.names }
      : current.kind === 'prefix'
        ? { logStreamPrefix: current.prefix }
        : {};
  return { selection, residual: and(residual) };
}
