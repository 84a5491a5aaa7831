import type { FilterPatternAst } from './ast.js';
import { describeChar, isAlphanumeric, isSpace, type Scanner } from './scanner.js';

/** AWS: terms with characters other than alphanumerics and `_` must be quoted. */
function isBareTermChar(char: string): boolean {
  return isAlphanumeric(char) || char === '_';
}

function readTerm(scanner: Scanner): string {
  const start = scanner.pos;
  if (scanner.peek() === '"') {
    const term = scanner.readQuoted();
    // AWS answers `""` with "Invalid character(s) in term".
    if (term === '') scanner.fail('empty quoted term', start);
    if (!scanner.atEnd() && !isSpace(scanner.peek())) {
      scanner.fail(`expected a space after the quoted term but found ${scanner.describeNext()}`);
    }
    return term;
  }
  const term = scanner.takeWhile((char) => !isSpace(char));
  if (term === '') scanner.fail(`expected a term but found ${scanner.describeNext()}`, start);
  for (let i = 0; i < term.length; i++) {
    const char = term.charAt(i);
    if (!isBareTermChar(char)) {
      const shown = String.fromCodePoint(term.codePointAt(i) ?? 0);
      scanner.fail(`invalid character ${describeChar(shown)} in term (quote terms that contain it)`, start + i);
    }
  }
  return term;
}

/**
 * Unstructured pattern: terms separated by spaces, `"exact phrases"`,
 * `-excluded` and `?optional` terms. The prefix must touch its term.
 */
export function parseTextPattern(scanner: Scanner): FilterPatternAst {
  const required: string[] = [];
  const excluded: string[] = [];
  const optional: string[] = [];
  for (;;) {
    scanner.skipSpace();
    if (scanner.atEnd()) break;
    const prefix = scanner.peek();
    if (prefix === '-' || prefix === '?') {
      scanner.pos++;
      if (scanner.atEnd() || isSpace(scanner.peek())) {
        scanner.fail(`expected a term right after '${prefix}'`);
      }
      (prefix === '-' ? excluded : optional).push(readTerm(scanner));
    } else {
      required.push(readTerm(scanner));
    }
  }
  return { kind: 'terms', required, excluded, optional };
}
