import { AppError } from '../errors.js';
import type { FilterPatternAst } from './ast.js';
import { parseDelimitedPattern } from './parse-delimited.js';
import { parseJsonPattern } from './parse-json.js';
import { parseTextPattern } from './parse-text.js';
import { parseRegex } from './regex.js';
import { MAX_FILTER_PATTERN_LENGTH, patternError, Scanner, type ParseContext } from './scanner.js';

function parseAny(scanner: Scanner): FilterPatternAst {
  const context: ParseContext = { regexCount: 0, wildcardCount: 0 };
  scanner.skipSpace();
  if (scanner.atEnd()) return { kind: 'all' };
  let ast: FilterPatternAst;
  switch (scanner.peek()) {
    case '{':
      ast = parseJsonPattern(scanner, context);
      break;
    case '[':
      ast = parseDelimitedPattern(scanner, context);
      break;
    case '%':
      // A regex stands alone in an unstructured pattern.
      ast = { kind: 'regex', regex: parseRegex(scanner, context) };
      break;
    default:
      return parseTextPattern(scanner);
  }
  scanner.skipSpace();
  if (!scanner.atEnd()) scanner.fail(`unexpected ${scanner.describeNext()} after the end of the pattern`);
  return ast;
}

/**
 * Parses a CloudWatch Logs filter pattern. Throws `logs:filter-pattern:invalid`
 * (with `metadata.position`, a 0-based offset) for every fault, and nothing else.
 */
export function parseFilterPattern(pattern: string): FilterPatternAst {
  if (typeof pattern !== 'string') throw patternError('the pattern must be a string', 0);
  if (pattern.length > MAX_FILTER_PATTERN_LENGTH) {
    throw patternError(`the pattern is longer than ${MAX_FILTER_PATTERN_LENGTH} characters`, MAX_FILTER_PATTERN_LENGTH);
  }
  try {
    return parseAny(new Scanner(pattern));
  } catch (error) {
    if (error instanceof AppError) throw error;
    // A bug here must still answer as a bad pattern, never as a 500 with a stack.
    throw patternError('the pattern could not be parsed', 0);
  }
}
