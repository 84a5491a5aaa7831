import { RE2JS } from 're2js';
import { appError } from './errors.js';
import { parseFilterPattern, type FilterPatternAst } from './filter-pattern/index.js';
import { isLeaf, type FilterNode } from './filter-tree/schema.js';

/**
 * What a filter can cost before it runs (docs/decisions.md, "CPU work off the event loop"). RE2 is linear in the
 * message, but its constant is the size of the compiled program: in the worst case every instruction is live at
 * every character. A regex whose worst case over the longest message an event may carry exceeds a source's CPU
 * budget is refused before anything runs; everything else runs in the filter pool and is stopped at its budget.
 */

/** The longest message a log event may carry, in characters (CloudWatch's event size, and local ingest's). */
export const MAX_MESSAGE_CHARS = 256 * 1024;

/**
 * Worst-case RE2JS throughput, in program instructions × message characters per millisecond: measured on a
 * two-core x86-64 machine with `(?:a[ab]{998}c)|(?:b[ab]{998}c)` over 2.5–50 KB of `a`/`b` (8.7–16 ns per
 * instruction and character), taken as 20 ns.
 */
export const REGEX_STEPS_PER_MS = 50_000;

/** A regex of a filter and what it costs at worst over one message of MAX_MESSAGE_CHARS. */
export interface RegexCost {
  /** Where it is: a filter-tree path (`filter.nodes[1].value`) or a filter-pattern position. */
  where: string;
  programSize: number;
  worstMs: number;
}

const worstMs = (programSize: number) => (programSize * MAX_MESSAGE_CHARS) / REGEX_STEPS_PER_MS;

/** The regexes of a parsed filter tree, with the flags the evaluator compiles them with. */
export function filterTreeRegexCosts(node: FilterNode, path = 'filter'): RegexCost[] {
  if (isLeaf(node)) {
    if (node.kind !== 'text' || node.op !== 'regex') return [];
    const flags = node.caseSensitive === true ? 0 : RE2JS.CASE_INSENSITIVE;
    const programSize = RE2JS.compile(node.value, flags).programSize();
    return [{ where: `${path}.value`, programSize, worstMs: worstMs(programSize) }];
  }
  switch (node.kind) {
    case 'all':
      return [];
    case 'not':
      return filterTreeRegexCosts(node.node, `${path}.node`);
    case 'and':
    case 'or':
      return node.nodes.flatMap((child, i) => filterTreeRegexCosts(child, `${path}.nodes[${i}]`));
  }
}

/** The `%regex%` operands of a filter pattern (already validated: it parses). */
export function filterPatternRegexCosts(pattern: string): RegexCost[] {
  const costs: RegexCost[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(visit);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const record = value as Record<string, unknown>;
    if (record.kind === 'regex' && typeof record.re2 === 'string' && typeof record.position === 'number') {
      // DOTALL, as the pattern evaluator compiles it.
      const programSize = RE2JS.compile(record.re2, RE2JS.DOTALL).programSize();
      costs.push({
        where: `the regex at character ${record.position + 1}`,
        programSize,
        worstMs: worstMs(programSize),
      });
      return;
    }
    Object.values(record).forEach(visit);
  };
  visit(parseFilterPattern(pattern) satisfies FilterPatternAst);
  return costs;
}

const seconds = (ms: number) => `${(ms / 1000).toLocaleString('en', { maximumFractionDigits: 1 })} s`;

/**
 * Refuses (400 `logs:filter:too-costly`) a filter whose regexes together could take longer than `budgetMs` on one
 * message: every regex runs on every message in the worst case. The description names the costliest one.
 */
export function checkRegexCost(costs: RegexCost[], budgetMs: number, subject: 'filter' | 'filterPattern'): void {
  const total = costs.reduce((sum, c) => sum + c.worstMs, 0);
  if (total <= budgetMs) return;
  const worst = costs.reduce((a, b) => (b.worstMs > a.worstMs ? b : a));
  const which = subject === 'filter' ? `The regex at ${worst.where}` : `In filterPattern, ${worst.where}`;
  const others = costs.length > 1 ? ` (all ${costs.length} regexes together: ${seconds(total)})` : '';
  throw appError('logs:filter:too-costly', {
    description:
      `${which} compiles to ${worst.programSize.toLocaleString('en')} RE2 instructions: on one message of ` +
      `${MAX_MESSAGE_CHARS / 1024} KiB it could take about ${seconds(worst.worstMs)}${others}, more than the ` +
      `${seconds(budgetMs)} a log source may spend evaluating a filter. Use shorter repetitions or fewer alternatives.`,
    metadata: {
      parameter: subject,
      where: worst.where,
      programSize: worst.programSize,
      estimatedMs: Math.round(total),
      budgetMs,
    },
  });
}
