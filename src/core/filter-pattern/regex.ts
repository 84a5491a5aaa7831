import { RE2JS } from 're2js';
import type { RegexOperand } from './ast.js';
import { describeChar, isAlphanumeric, type ParseContext, type Scanner } from './scanner.js';

/** AWS: "There is a limit of 2 regex for each filter pattern". */
export const MAX_REGEXES_PER_PATTERN = 2;

/**
 * RE2 program size above which a regex is refused. AWS does not document one;
 * without it `%.{1000}.{1000}…%` (legal RE2) costs seconds per event.
 */
export const MAX_REGEX_PROGRAM_SIZE = 2000;

/** Symbols AWS allows as literals in a regex; the space appears in its own examples. */
const SYMBOLS = new Set([':', '_', '#', '=', '@', '/', ';', ',', '-', ' ']);
const OPERATORS = new Set(['^', '$', '?', '[', ']', '{', '}', '|', '\\', '*', '+', '.']);
const CLASS_ESCAPES = new Set(['d', 'D', 's', 'S', 'w', 'W']);

/** Any literal character as an RE2 hex escape: valid inside and outside classes. */
function hexLiteral(char: string): string {
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

function checkCharacter(scanner: Scanner, char: string, position: number): void {
  const code = char.charCodeAt(0);
  if (code > 0x7f) scanner.fail('multi-byte characters are not supported in a regex', position);
  if (char === '(' || char === ')') {
    scanner.fail('parentheses are not supported in a regex (match them with \\x28 and \\x29)', position);
  }
  if (!isAlphanumeric(char) && !SYMBOLS.has(char) && !OPERATORS.has(char)) {
    scanner.fail(`unsupported character ${describeChar(char)} in a regex`, position);
  }
}

/** Translates the escape at `pos` (a backslash) and advances past it. */
function translateEscape(scanner: Scanner, regexStart: number): string {
  const position = scanner.pos;
  const next = scanner.peek(1);
  if (next === '') scanner.fail('unterminated regex (it must end with %)', regexStart);
  if (next === '%') scanner.fail("a regex cannot end with '\\'", position);
  if (CLASS_ESCAPES.has(next)) {
    scanner.pos += 2;
    return `\\${next}`;
  }
  if (next === 'x') {
    const hex = scanner.text.slice(scanner.pos + 2, scanner.pos + 4);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) scanner.fail('\\x must be followed by two hexadecimal digits', position);
    scanner.pos += 4;
    return `\\x${hex}`;
  }
  checkCharacter(scanner, next, position + 1);
  if (isAlphanumeric(next)) scanner.fail(`unsupported escape \\${next} in a regex`, position);
  scanner.pos += 2;
  return hexLiteral(next);
}

/** `{m}`, `{m,}`, `{,n}`, `{m,n}` (spaces allowed, as AWS writes `{m, n}`). RE2 has no `{,n}`. */
function translateRepetition(scanner: Scanner): string {
  const position = scanner.pos;
  const close = scanner.text.indexOf('}', position);
  const body = close < 0 ? '' : scanner.text.slice(position + 1, close);
  const match = /^ *(\d{0,4}) *(?:(,) *(\d{0,4}) *)?$/.exec(body);
  if (close < 0 || match === null || (match[1] === '' && (match[3] ?? '') === '')) {
    scanner.fail("'{' must start a repetition such as {2}, {1,3}, {2,} or {,3}", position);
  }
  scanner.pos = close + 1;
  const [, min = '', comma, max = ''] = match;
  if (comma === undefined) return `{${min}}`;
  return `{${min === '' ? '0' : min},${max}}`;
}

/**
 * Reads `%…%` at `pos`, checks it against AWS's regex subset, translates it
 * to RE2 and makes sure RE2 accepts it.
 */
export function parseRegex(scanner: Scanner, context: ParseContext): RegexOperand {
  const start = scanner.pos;
  context.regexCount++;
  if (context.regexCount > MAX_REGEXES_PER_PATTERN) {
    scanner.fail(`a pattern may contain at most ${MAX_REGEXES_PER_PATTERN} regular expressions`, start);
  }
  scanner.pos++;
  let re2 = '';
  let classStart = -1;
  // Offset of a class's first member, where `]` is literal rather than closing.
  let classFirst = -1;
  for (;;) {
    if (scanner.atEnd()) scanner.fail('unterminated regex (it must end with %)', start);
    const position = scanner.pos;
    const char = scanner.peek();
    if (char === '%') break;
    if (char === '\\') {
      re2 += translateEscape(scanner, start);
      continue;
    }
    checkCharacter(scanner, char, position);
    if (classStart >= 0) {
      const first = position === classFirst;
      re2 += translateClassChar(char, first);
      if (char === ']' && !first) classStart = -1;
      scanner.pos++;
      continue;
    }
    if (char === '{') {
      re2 += translateRepetition(scanner);
      continue;
    }
    if (char === '}' || char === ']') scanner.fail(`unbalanced ${describeChar(char)} in a regex`, position);
    if (char === '[') {
      classStart = position;
      re2 += '[';
      if (scanner.peek(1) === '^') {
        re2 += '^';
        scanner.pos++;
      }
      classFirst = scanner.pos + 1;
    } else if (isAlphanumeric(char) || OPERATORS.has(char)) {
      re2 += char;
    } else {
      re2 += hexLiteral(char);
    }
    scanner.pos++;
  }
  if (classStart >= 0) scanner.fail("unterminated character class (missing ']')", classStart);
  const source = scanner.text.slice(start + 1, scanner.pos);
  if (source === '') scanner.fail('empty regex', start);
  scanner.pos++;
  const operand: RegexOperand = { kind: 'regex', source, re2, position: start };
  compileRegexOrFail(operand, (reason) => scanner.fail(reason, start));
  return operand;
}

/**
 * Inside `[…]`: `-` keeps its range meaning and `]` closes the class unless
 * it comes first (POSIX); every other character is literal, so RE2 never sees
 * `[:alpha:]` or other syntax AWS does not have.
 */
function translateClassChar(char: string, first: boolean): string {
  if (char === ']') return first ? hexLiteral(char) : ']';
  if (char === '-' || isAlphanumeric(char)) return char;
  return hexLiteral(char);
}

/** Compiles a regex operand; `onError` receives the reason when RE2 refuses it. */
export function compileRegexOrFail(operand: RegexOperand, onError: (reason: string) => never): RE2JS {
  let compiled: RE2JS;
  try {
    // DOTALL: AWS documents '.' as "any single character", newlines included.
    compiled = RE2JS.compile(operand.re2, RE2JS.DOTALL);
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : 'rejected';
    return onError(`invalid regex (${detail})`);
  }
  if (compiled.programSize() > MAX_REGEX_PROGRAM_SIZE) return onError('regex is too complex');
  return compiled;
}
