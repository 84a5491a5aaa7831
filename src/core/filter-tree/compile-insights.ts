import { hasCaseVariants } from './case-fold.js';
import type { FilterCapabilities } from './plan.js';
import { simplifyFilter } from './plan.js';
import { PORTABLE_REGEX, emitRegex, literalRegex, parseRegexSubset, type RegexAst } from './regex-subset.js';
import type { FieldNode, FilterLeaf, FilterNode, FilterScalar, TextNode } from './schema.js';

/**
 * Logs Insights query language, as documented (CWL_QuerySyntax, filter):
 * `like "s"` is a case-sensitive substring test, `like /re/` an unanchored
 * regex match, `=` exact equality, `in [..]` set membership, `ispresent(f)`
 * field presence; `@message` is the raw event and `@logStream` its stream.
 * Field names other than letters, digits, `.` and `@` need backticks.
 *
 * A leaf is compiled only where that meaning is certainly `matches`':
 * - level: never (Berth derives it from the message);
 * - text: case-sensitive contains/equals/startsWith; case-insensitive
 *   contains/startsWith as a regex of explicit folding classes; a regex in the
 *   portable subset without `$` (Java's `$` also matches before a final line
 *   break); not case-insensitive equals, for want of an exact end anchor;
 * - stream: equals and prefix;
 * - field: only when asked (`pushJsonFields`), because Insights discovers at
 *   most 200 fields of a JSON event, flattens arrays into `a.0`, `a.1`, and
 *   does not document how it compares a string field with a number.
 */

/** A quoted string literal; undefined when the value cannot be quoted without relying on escapes. */
function quote(value: string): string | undefined {
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return undefined;
  if (!value.includes('"')) return `"${value}"`;
  if (!value.includes("'")) return `'${value}'`;
  return undefined;
}

/** `/…/`; undefined for an empty pattern, which `//` would not spell. */
function regexLiteral(ast: RegexAst): string | undefined {
  const pattern = emitRegex(ast, PORTABLE_REGEX);
  return pattern === undefined || pattern === '' ? undefined : `/${pattern}/`;
}

function literalMatch(
  subject: string,
  value: string,
  op: 'contains' | 'startsWith',
  caseInsensitive: boolean,
): string | undefined {
  const literal = literalRegex(value, caseInsensitive);
  const re = regexLiteral(op === 'contains' ? literal : { t: 'seq', items: [{ t: 'bol' }, literal] });
  return re && `${subject} like ${re}`;
}

function text(node: TextNode): string | undefined {
  const caseInsensitive = node.caseSensitive !== true && hasCaseVariants(node.value);
  switch (node.op) {
    case 'regex': {
      const ast = parseRegexSubset(node.value, node.caseSensitive !== true);
      const re = ast && regexLiteral(ast);
      return re && `@message like ${re}`;
    }
    case 'equals': {
      const q = caseInsensitive ? undefined : quote(node.value);
      return q && `@message = ${q}`;
    }
    case 'contains': {
      // An empty substring is left to Berth: the docs do not say what `like ""` does.
      if (node.value === '') return undefined;
      const q = caseInsensitive ? undefined : quote(node.value);
      return q ? `@message like ${q}` : literalMatch('@message', node.value, 'contains', caseInsensitive);
    }
    case 'startsWith':
      return literalMatch('@message', node.value, 'startsWith', caseInsensitive);
  }
}

function fieldName(path: string): string {
  return /^[A-Za-z0-9.]+$/.test(path) ? path : `\`${path}\``;
}

/** Strings and plain decimal numbers only: booleans, null and exponents have no documented spelling. */
function scalar(value: FilterScalar): string | undefined {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' && /^-?\d+(\.\d+)?$/.test(String(value))) return String(value);
  return undefined;
}

function field(node: FieldNode): string | undefined {
  const name = fieldName(node.path);
  switch (node.op) {
    case 'exists':
      return `ispresent(${name})`;
    case 'eq': {
      const v = scalar(node.value);
      return v && `${name} = ${v}`;
    }
    case 'neq': {
      const v = scalar(node.value);
      return v && `(ispresent(${name}) and ${name} != ${v})`;
    }
    case 'in': {
      const items = node.value.map((v) => (typeof v === 'string' ? quote(v) : undefined));
      return items.every((v) => v !== undefined) ? `${name} in [${items.join(', ')}]` : undefined;
    }
    case 'contains':
      return typeof node.value === 'string' && quote(node.value) ? `${name} like ${quote(node.value)}` : undefined;
    default: {
      const v = typeof node.value === 'number' ? scalar(node.value) : undefined;
      return v && `${name} ${{ gt: '>', gte: '>=', lt: '<', lte: '<=' }[node.op]} ${v}`;
    }
  }
}

function compileLeaf(leaf: FilterLeaf, pushJsonFields: boolean): string | undefined {
  switch (leaf.kind) {
    case 'level':
      return undefined;
    case 'text':
      return text(leaf);
    case 'stream': {
      if (leaf.op === 'prefix') return literalMatch('@logStream', leaf.value, 'startsWith', false);
      const q = quote(leaf.value);
      return q && `@logStream = ${q}`;
    }
    case 'field':
      return pushJsonFields ? field(leaf) : undefined;
  }
}

export interface InsightsCapabilityOptions {
  /** Push field predicates, trusting Insights' JSON field discovery (see above); default false. */
  pushJsonFields?: boolean;
}

/** One leaf longer than this is kept out of the query (Insights queries are limited to 10,000 characters). */
const MAX_LEAF_LENGTH = 1000;
/** Longer filters are not sent: the query pushes TRUE and Berth filters in process. */
export const MAX_INSIGHTS_FILTER_LENGTH = 6000;

export function insightsCapabilities(options: InsightsCapabilityOptions = {}): FilterCapabilities {
  const pushJsonFields = options.pushJsonFields ?? false;
  return {
    backend: 'CloudWatch Logs Insights',
    canPush: (leaf) => {
      const compiled = compileLeaf(leaf, pushJsonFields);
      return compiled !== undefined && compiled.length <= MAX_LEAF_LENGTH;
    },
    // An Insights row carries @message and @logStream, from which Berth derives level and JSON.
    canApplyInProcess: () => true,
  };
}

export interface InsightsFilter {
  /** `filter …` to append to the query after a `|`, or '' when every row passes. */
  command: string;
  /** No row can match: skip the query. */
  matchesNothing: boolean;
  /** The filter was too long and was left out: the rows must be filtered in process with `effective`. */
  relaxed: boolean;
}

/**
 * Compiles a planned (`pushed`) filter into a Logs Insights `filter`
 * command. Throws on a leaf Insights cannot express: plan the filter with
 * `insightsCapabilities` first, passing the same options.
 */
export function compileInsightsFilter(node: FilterNode, options: InsightsCapabilityOptions = {}): InsightsFilter {
  const pushJsonFields = options.pushJsonFields ?? false;
  // Every leaf is a comparison or a self-contained parenthesised group, so only and/or need parentheses.
  const compile = (n: FilterNode, top: boolean): string => {
    switch (n.kind) {
      case 'all':
        throw new Error('compileInsightsFilter: TRUE inside a simplified tree');
      case 'not':
        return `not (${compile(n.node, true)})`;
      case 'and':
      case 'or': {
        const body = n.nodes.map((child) => compile(child, false)).join(` ${n.kind} `);
        return top ? body : `(${body})`;
      }
      default: {
        const leaf = compileLeaf(n, pushJsonFields);
        if (leaf === undefined)
          throw new Error(`compileInsightsFilter: ${n.kind} leaf is not pushable to Insights; plan the filter first`);
        return leaf;
      }
    }
  };
  const simple = simplifyFilter(node);
  if (simple.kind === 'all') return { command: '', matchesNothing: false, relaxed: false };
  if (simple.kind === 'not' && simple.node.kind === 'all') return { command: '', matchesNothing: true, relaxed: false };
  const command = `filter ${compile(simple, true)}`;
  if (command.length > MAX_INSIGHTS_FILTER_LENGTH) return { command: '', matchesNothing: false, relaxed: true };
  return { command, matchesNothing: false, relaxed: false };
}
