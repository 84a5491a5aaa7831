import type { FilterPatternAst, JsonExpression, JsonSelector, JsonTest } from './ast.js';
import { parseComparisonOperator, parseOperand } from './operand.js';
import { parseSelector } from './parse-selector.js';
import type { ParseContext, Scanner } from './scanner.js';

function readKeyword(scanner: Scanner): string {
  return scanner.takeWhile((char) => /^[A-Za-z]$/.test(char));
}

/** `IS NULL|TRUE|FALSE` or `NOT EXISTS` after a selector; keywords are upper case as AWS writes them. */
function parseTest(scanner: Scanner, selector: JsonSelector): JsonExpression {
  const position = scanner.pos;
  const keyword = readKeyword(scanner);
  scanner.skipSpace();
  const argumentPosition = scanner.pos;
  if (keyword === 'IS') {
    const value = readKeyword(scanner);
    const tests: Record<string, JsonTest> = { NULL: 'null', TRUE: 'true', FALSE: 'false' };
    const test = Object.hasOwn(tests, value) ? tests[value] : undefined;
    if (test !== undefined) return { kind: 'test', selector, test };
    if (value === 'NOT') scanner.fail('IS NOT is not supported', position);
    scanner.fail('expected NULL, TRUE or FALSE after IS', argumentPosition);
  }
  if (keyword === 'NOT') {
    if (readKeyword(scanner) === 'EXISTS') return { kind: 'test', selector, test: 'not-exists' };
    scanner.fail('expected EXISTS after NOT', argumentPosition);
  }
  if (keyword === 'EXISTS') scanner.fail('EXISTS is not supported (only NOT EXISTS)', position);
  return scanner.fail(
    `expected a comparison (=, !=, <, <=, >, >=, IS or NOT EXISTS) after ${selector.text} but found ${scanner.describeNext()}`,
    position,
  );
}

function parseCondition(scanner: Scanner, context: ParseContext): JsonExpression {
  const selector = parseSelector(scanner, context);
  scanner.skipSpace();
  const operator = parseComparisonOperator(scanner);
  if (operator === undefined) return parseTest(scanner, selector);
  return { kind: 'compare', selector, operator, operand: parseOperand(scanner, context, operator) };
}

/*
 * Recursive descent with the precedence AWS documents: () > && > ||. The
 * pattern is at most 1024 characters, so nesting (and recursion) is at most
 * 512 levels deep.
 */

function parsePrimary(scanner: Scanner, context: ParseContext): JsonExpression {
  scanner.skipSpace();
  if (scanner.peek() === '(') {
    const open = scanner.pos;
    scanner.pos++;
    const inner = parseOr(scanner, context);
    scanner.skipSpace();
    if (!scanner.accept(')')) {
      scanner.fail(`expected ')' to close the '(' at position ${open} but found ${scanner.describeNext()}`);
    }
    return inner;
  }
  if (scanner.peek() === '$') return parseCondition(scanner, context);
  return scanner.fail(`expected a property selector such as $.name but found ${scanner.describeNext()}`);
}

function parseAnd(scanner: Scanner, context: ParseContext): JsonExpression {
  const operands = [parsePrimary(scanner, context)];
  for (;;) {
    scanner.skipSpace();
    if (!scanner.accept('&&')) break;
    operands.push(parsePrimary(scanner, context));
  }
  return operands.length === 1 && operands[0] !== undefined ? operands[0] : { kind: 'and', operands };
}

function parseOr(scanner: Scanner, context: ParseContext): JsonExpression {
  const operands = [parseAnd(scanner, context)];
  for (;;) {
    scanner.skipSpace();
    if (!scanner.accept('||')) break;
    operands.push(parseAnd(scanner, context));
  }
  return operands.length === 1 && operands[0] !== undefined ? operands[0] : { kind: 'or', operands };
}

/** `{ … }` at `pos`. */
export function parseJsonPattern(scanner: Scanner, context: ParseContext): FilterPatternAst {
  scanner.pos++;
  const expression = parseOr(scanner, context);
  scanner.skipSpace();
  if (scanner.atEnd()) scanner.fail("a pattern that starts with '{' must end with '}'");
  if (!scanner.accept('}')) scanner.fail(`expected &&, || or '}' but found ${scanner.describeNext()}`);
  return { kind: 'json', expression };
}
