import type { JsonSelector, SelectorSegment } from './ast.js';
import { isAlphanumeric, type ParseContext, type Scanner } from './scanner.js';

/** AWS: "You can only use up to one wildcard selector in a property selector". */
export const MAX_WILDCARDS_PER_SELECTOR = 1;
/** AWS: "…and up to three wildcard selectors in a filter pattern with compound expressions". */
export const MAX_WILDCARDS_PER_PATTERN = 3;

/** AWS: property names are alphanumeric with `-` and `_`; others need `['…']`. */
function isNameChar(char: string): boolean {
  return isAlphanumeric(char) || char === '-' || char === '_';
}

function readQuotedKey(scanner: Scanner): string {
  const start = scanner.pos;
  const quote = scanner.peek();
  scanner.pos++;
  let key = '';
  for (;;) {
    if (scanner.atEnd()) scanner.fail('unterminated quoted property name', start);
    const char = scanner.peek();
    if (char === quote) break;
    if (char === '\\' && scanner.pos + 1 < scanner.text.length) {
      key += scanner.peek(1);
      scanner.pos += 2;
      continue;
    }
    key += char;
    scanner.pos++;
  }
  scanner.pos++;
  return key;
}

/** `[0]`, `[*]` or `['key']` at `pos`. */
function readBracket(scanner: Scanner): SelectorSegment {
  const start = scanner.pos;
  scanner.pos++;
  let segment: SelectorSegment;
  const next = scanner.peek();
  if (next === '*') {
    scanner.pos++;
    segment = { kind: 'wildcard' };
  } else if (next === "'" || next === '"') {
    segment = { kind: 'key', key: readQuotedKey(scanner) };
  } else {
    const digits = scanner.takeWhile((char) => char >= '0' && char <= '9');
    if (digits === '') scanner.fail("expected an array index, '*' or a quoted property name after '['", start + 1);
    segment = { kind: 'index', index: Number(digits) };
  }
  if (!scanner.accept(']')) scanner.fail(`expected ']' but found ${scanner.describeNext()}`);
  return segment;
}

/** Reads `$.a.b[0]['c.d'].*` at `pos` (which holds the `$`). */
export function parseSelector(scanner: Scanner, context: ParseContext): JsonSelector {
  const start = scanner.pos;
  scanner.pos++;
  if (scanner.peek() !== '.') scanner.fail("a property selector starts with '$.'");
  const segments: SelectorSegment[] = [];
  let wildcards = 0;
  for (;;) {
    const position = scanner.pos;
    let segment: SelectorSegment;
    if (scanner.peek() === '.') {
      scanner.pos++;
      const next = scanner.peek();
      if (next === '*') {
        scanner.pos++;
        segment = { kind: 'wildcard' };
      } else if (next === '[') {
        segment = readBracket(scanner);
      } else {
        const name = scanner.takeWhile(isNameChar);
        if (name === '') scanner.fail(`expected a property name after '.' but found ${scanner.describeNext()}`);
        segment = { kind: 'key', key: name };
      }
    } else if (scanner.peek() === '[') {
      segment = readBracket(scanner);
    } else {
      break;
    }
    if (segment.kind === 'wildcard') {
      wildcards++;
      context.wildcardCount++;
      if (wildcards > MAX_WILDCARDS_PER_SELECTOR) {
        scanner.fail('a property selector may contain only one wildcard', position);
      }
      if (context.wildcardCount > MAX_WILDCARDS_PER_PATTERN) {
        scanner.fail(`a pattern may contain at most ${MAX_WILDCARDS_PER_PATTERN} wildcard selectors`, position);
      }
    }
    segments.push(segment);
  }
  return { text: scanner.text.slice(start, scanner.pos), segments };
}
