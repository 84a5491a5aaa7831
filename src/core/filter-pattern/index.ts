import { compileAst, type EventPredicate } from './evaluate.js';
import { parseFilterPattern } from './parser.js';

export type {
  ComparisonOperator,
  DelimitedField,
  FieldCondition,
  FilterPatternAst,
  JsonExpression,
  JsonSelector,
  Operand,
} from './ast.js';
export type { EventPredicate } from './evaluate.js';
export { parseFilterPattern } from './parser.js';
export { MAX_FILTER_PATTERN_LENGTH } from './scanner.js';

/**
 * Compiles a CloudWatch Logs filter pattern into a predicate on event
 * messages. A blank pattern matches every event. Throws the same
 * `logs:filter-pattern:invalid` error as `parseFilterPattern`.
 */
export function compileFilterPattern(pattern: string): EventPredicate {
  return compileAst(parseFilterPattern(pattern));
}
