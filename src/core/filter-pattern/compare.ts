import type { RE2JS } from 're2js';
import type { ComparisonOperator, Operand, StringOperand } from './ast.js';
import { parseNumber } from './operand.js';

/** An operand ready to test: regexes compiled once per pattern. */
export type CompiledOperand = Exclude<Operand, { kind: 'regex' }> | { kind: 'regex'; regex: RE2JS };

function matchesWildcard(value: string, operand: StringOperand): boolean {
  const { text, anyBefore, anyAfter } = operand;
  if (anyBefore && anyAfter) return value.includes(text);
  if (anyBefore) return value.endsWith(text);
  if (anyAfter) return value.startsWith(text);
  return value === text;
}

function compareNumbers(actual: number, operator: ComparisonOperator, expected: number): boolean {
  switch (operator) {
    case '=':
      return actual === expected;
    case '!=':
      return actual !== expected;
    case '<':
      return actual < expected;
    case '<=':
      return actual <= expected;
    case '>':
      return actual > expected;
    case '>=':
      return actual >= expected;
  }
}

/**
 * Compares a value node (a JSON string or number, or a space-delimited field)
 * with an operand. A numeric operand compares numerically with numbers and
 * numeric strings; `=` also holds when the text is identical.
 */
export function compareValue(actual: string | number, operator: ComparisonOperator, operand: CompiledOperand): boolean {
  const text = typeof actual === 'number' ? String(actual) : actual;
  if (operand.kind === 'number') {
    const number = typeof actual === 'number' ? actual : parseNumber(actual);
    if (operator === '=' || operator === '!=') {
      const equal = text === operand.text || (number !== undefined && number === operand.value);
      return operator === '=' ? equal : !equal;
    }
    return number !== undefined && compareNumbers(number, operator, operand.value);
  }
  // The parser only pairs strings and regexes with = and !=.
  if (operator !== '=' && operator !== '!=') return false;
  const matched = operand.kind === 'regex' ? operand.regex.test(text) : matchesWildcard(text, operand);
  return operator === '!=' ? !matched : matched;
}
