import { appError, type AppError } from '../errors.js';

/** AWS's limit on a filter pattern (PutMetricFilter, FilterLogEvents, StartLiveTail). */
export const MAX_FILTER_PATTERN_LENGTH = 1024;

/** Every fault in a pattern is this one error, positioned at a 0-based offset. */
export function patternError(reason: string, position: number): AppError {
  return appError('logs:filter-pattern:invalid', {
    message: `Invalid filter pattern: ${reason} at position ${position}`,
    metadata: { position },
  });
}

/** Quotas and counters shared by every part of one pattern. */
export interface ParseContext {
  regexCount: number;
  wildcardCount: number;
}

const SPACE = new Set([' ', '\t', '\n', '\r', '\f', '\v']);

export function isSpace(char: string): boolean {
  return SPACE.has(char);
}

export function isAlphanumeric(char: string): boolean {
  return /^[A-Za-z0-9]$/.test(char);
}

/** Shows a character in a message without letting control characters through. */
export function describeChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x20 || code === 0x7f) return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${char}'`;
}

/** A cursor over the pattern; every parser advances the same one. */
export class Scanner {
  pos = 0;

  constructor(readonly text: string) {}

  atEnd(): boolean {
    return this.pos >= this.text.length;
  }

  /** The character at `pos + offset`, or '' past the end. */
  peek(offset = 0): string {
    return this.text.charAt(this.pos + offset);
  }

  startsWith(token: string): boolean {
    return this.text.startsWith(token, this.pos);
  }

  skipSpace(): void {
    while (!this.atEnd() && isSpace(this.peek())) this.pos++;
  }

  /** Consumes `token` if it is next. */
  accept(token: string): boolean {
    if (!this.startsWith(token)) return false;
    this.pos += token.length;
    return true;
  }

  /** Consumes characters while `test` holds and returns them. */
  takeWhile(test: (char: string) => boolean): string {
    const start = this.pos;
    while (!this.atEnd() && test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }

  fail(reason: string, position = this.pos): never {
    throw patternError(reason, position);
  }

  /** A message fragment naming what is at `pos`. */
  describeNext(): string {
    return this.atEnd() ? 'end of pattern' : describeChar(String.fromCodePoint(this.text.codePointAt(this.pos) ?? 0));
  }

  /**
   * Reads a double-quoted string at `pos`; a backslash makes the next
   * character literal (so `\"` and `\\` work as CDK's `quoteTerm` writes them).
   */
  readQuoted(): string {
    const start = this.pos;
    this.pos++;
    let value = '';
    for (;;) {
      if (this.atEnd()) this.fail('unterminated quoted string', start);
      const char = this.peek();
      if (char === '"') {
        this.pos++;
        return value;
      }
      if (char === '\\') {
        if (this.pos + 1 >= this.text.length) this.fail('unterminated quoted string', start);
        value += this.peek(1);
        this.pos += 2;
        continue;
      }
      value += char;
      this.pos++;
    }
  }
}
