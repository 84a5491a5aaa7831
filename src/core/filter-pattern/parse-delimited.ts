import type { DelimitedField, FieldCondition, FilterPatternAst } from './ast.js';
import { parseComparisonOperator, parseOperand } from './operand.js';
import { isAlphanumeric, type ParseContext, type Scanner } from './scanner.js';

/** Field names as CDK validates them (`^[a-zA-Z0-9_-]+$`). */
function isNameChar(char: string): boolean {
  return isAlphanumeric(char) || char === '_' || char === '-';
}

interface Comparison {
  name: string;
  position: number;
  condition?: FieldCondition;
}

function parseComparison(scanner: Scanner, context: ParseContext): Comparison {
  scanner.skipSpace();
  const position = scanner.pos;
  const name = scanner.takeWhile(isNameChar);
  if (name === '') scanner.fail(`expected a field name or '...' but found ${scanner.describeNext()}`);
  scanner.skipSpace();
  const operator = parseComparisonOperator(scanner);
  if (operator === undefined) return { name, position };
  return {
    name,
    position,
    condition: { kind: 'compare', operator, operand: parseOperand(scanner, context, operator) },
  };
}

/**
 * One field: a bare name, or conditions on that name joined by `&&` (binding
 * tighter) and `||`. AWS rejects `status_code = 4* && bytes > 1000`: every
 * condition must name the field it sits in.
 */
function parseField(scanner: Scanner, context: ParseContext): { name: string; condition?: FieldCondition } {
  const first = parseComparison(scanner, context);
  const alternatives: FieldCondition[][] = [[]];
  let current = alternatives[0] as FieldCondition[];
  let comparison = first;
  for (;;) {
    if (comparison.name !== first.name) {
      scanner.fail(`every condition in a field must name that field ('${first.name}')`, comparison.position);
    }
    scanner.skipSpace();
    const joiner = scanner.startsWith('&&') ? '&&' : scanner.startsWith('||') ? '||' : undefined;
    if (comparison.condition === undefined) {
      if (joiner !== undefined || comparison !== first) {
        scanner.fail(
          `expected a comparison operator after '${comparison.name}'`,
          comparison.position + comparison.name.length,
        );
      }
      return { name: first.name };
    }
    current.push(comparison.condition);
    if (joiner === undefined) break;
    scanner.pos += 2;
    if (joiner === '||') {
      current = [];
      alternatives.push(current);
    }
    comparison = parseComparison(scanner, context);
  }
  const conjunctions = alternatives.map(
    (operands): FieldCondition =>
      operands.length === 1 && operands[0] !== undefined ? operands[0] : { kind: 'and', operands },
  );
  const condition =
    conjunctions.length === 1 && conjunctions[0] !== undefined
      ? conjunctions[0]
      : { kind: 'or' as const, operands: conjunctions };
  return { name: first.name, condition };
}

/** `[a, b=1, ..., c>2]` at `pos`. */
export function parseDelimitedPattern(scanner: Scanner, context: ParseContext): FilterPatternAst {
  const open = scanner.pos;
  scanner.pos++;
  const fields: DelimitedField[] = [];
  const names = new Set<string>();
  let ellipsisSeen = false;
  for (;;) {
    scanner.skipSpace();
    const position = scanner.pos;
    if (scanner.peek() === ']' && fields.length > 0) {
      // `[..., status_code=4*,]`: AWS's example extracts the last value as an
      // unnamed field ("$7"), so a trailing comma stands for one more field.
      fields.push({ kind: 'field', name: '' });
      scanner.pos++;
      break;
    }
    if (scanner.accept('...')) {
      // One ellipsis keeps matching linear: fields before it align with the
      // first tokens and fields after it with the last ones.
      if (ellipsisSeen) scanner.fail("a pattern may contain only one '...'", position);
      ellipsisSeen = true;
      fields.push({ kind: 'ellipsis' });
    } else {
      const field = parseField(scanner, context);
      if (names.has(field.name)) scanner.fail(`field '${field.name}' appears twice`, position);
      names.add(field.name);
      fields.push({ kind: 'field', ...field });
    }
    scanner.skipSpace();
    if (scanner.accept(',')) continue;
    if (scanner.accept(']')) break;
    if (scanner.atEnd()) scanner.fail(`a pattern that starts with '[' must end with ']' (opened at position ${open})`);
    scanner.fail(`expected ',' or ']' but found ${scanner.describeNext()}`);
  }
  return { kind: 'delimited', fields };
}
