import type { ComparisonOperator, Operand, StringOperand } from './ast.js';
import { parseRegex } from './regex.js';
import { isAlphanumeric, type ParseContext, type Scanner } from './scanner.js';

/** An integer or decimal with optional sign and exponent, as AWS's numeric operands. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Reads a number written the way AWS accepts it, or undefined. */
export function parseNumber(text: string): number | undefined {
  if (text.length > 400 || !NUMBER.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * Characters of an unquoted value. AWS asks for quotes around anything but
 * alphanumerics and `_`, yet its own examples write `123.123.*`, `4*` and
 * `*.html*` bare, and numbers carry signs and exponents.
 */
function isBareValueChar(char: string): boolean {
  return isAlphanumeric(char) || char === '_' || char === '.' || char === '*' || char === '+' || char === '-';
}

/** Operators in the order they must be tried (two-character ones first). */
const OPERATORS: readonly ComparisonOperator[] = ['!=', '<=', '>=', '=', '<', '>'];

export function parseComparisonOperator(scanner: Scanner): ComparisonOperator | undefined {
  return OPERATORS.find((operator) => scanner.accept(operator));
}

export function isOrderingOperator(operator: ComparisonOperator): boolean {
  return operator !== '=' && operator !== '!=';
}

export function stringOperand(raw: string): StringOperand {
  let text = raw;
  const anyBefore = text.startsWith('*');
  if (anyBefore) text = text.slice(1);
  const anyAfter = text.endsWith('*');
  if (anyAfter) text = text.slice(0, -1);
  return { kind: 'string', text, anyBefore, anyAfter };
}

/** Reads the right-hand side of a comparison: "quoted", %regex%, a number or a bare word. */
export function parseOperand(scanner: Scanner, context: ParseContext, operator: ComparisonOperator): Operand {
  scanner.skipSpace();
  const position = scanner.pos;
  const ordering = isOrderingOperator(operator);
  const next = scanner.peek();
  if (next === '%') {
    if (ordering) scanner.fail(`a regex can only be compared with = or !=, not ${operator}`, position);
    return parseRegex(scanner, context);
  }
  if (next === '"') {
    if (ordering) scanner.fail(`${operator} needs a number`, position);
    return stringOperand(scanner.readQuoted());
  }
  const raw = scanner.takeWhile(isBareValueChar);
  if (raw === '') scanner.fail(`expected a value after ${operator} but found ${scanner.describeNext()}`, position);
  const value = parseNumber(raw);
  if (value !== undefined) return { kind: 'number', value, text: raw };
  if (ordering) scanner.fail(`${operator} needs a number`, position);
  return stringOperand(raw);
}
