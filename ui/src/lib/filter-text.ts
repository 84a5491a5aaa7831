import { FIELD_PATH_PATTERN } from '../../../src/core/filter-tree/limits.js';
import type { FilterNode, FilterScalar } from '../../../src/core/filter-tree/schema.js';
import { LEVELS, type Level } from '../../../src/core/log-level.js';
import { NUMBER, OPS } from './filter-text-format.js';

export { formatFilterText } from './filter-text-format.js';

/*
 * The one-line filter syntax: a spelling of the API's filter tree (docs/design.md#2-log-query) for the common case.
 *
 *   timeout "connection reset"     text contains (case-insensitive); terms side by side are ANDed
 *   a OR b                         or; AND binds tighter than OR:  a b OR c  is  (a AND b) OR c
 *   -a   NOT a                     not; binds tightest:  -(a OR b)
 *   ( … )                          grouping; every pair of parentheses is one and/or node
 *   AND                            optional between terms (means nothing more than a space)
 *   *                              matches everything ({kind:"all"}); the empty line is the same
 *   "…"  ="…"  ^"…"                text contains, equals, starts with; the quoted string is a JSON string
 *   /re/   ~"re"                   RE2 regex (a `/` inside /…/ is written `\/`; ~"…" takes a JSON string)
 *   "…"c  /re/c   "…"i  /re/i      suffix c: caseSensitive: true; suffix i: caseSensitive: false (explicit)
 *   level:error,warn               level is one of (names case-insensitive)
 *   stream:web/1   stream:web/*    stream name equals, or starts with (a trailing *); stream:"a b"* quotes
 *   user.id=42   status>=500       JSON field: = != > >= < <= and *= (contains), value JSON-typed:
 *   user.name:exists               42 is a number, "42" a string, true/false/null, other bare words strings
 *   code:in(500,"x",null)          field equals one of
 *   @level:exists                  a leading @ forces a field (needed for the paths `level` and `stream`)
 *
 * A bare word is any run of characters other than white space, parentheses and `"`; one that does not
 * start like another term (`-`, `=`, `^`, `~`, `/`, `@`, `level:`, `stream:`, `path=` …) is text. A word
 * starting `name:` with any other name (`msg:x`) is an error, not text: quote it (`"msg:x"`) to search for it. `OR`,
 * `AND`, `NOT` are keywords only in capitals; quote them to search for them.
 * formatFilterText spells every tree except one-child and/or groups, empty groups, empty level or `in`
 * lists and non-finite numbers; parseFilterText(formatFilterText(t)) deep-equals t.
 */

export type FilterTextResult = { ok: true; filter: FilterNode } | { ok: false; error: string; at: number };

class Fail extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
  }
}

const FIELD_HEAD = new RegExp(
  `(?<path>${FIELD_PATH_PATTERN.slice(1, -1)})(?<op>:exists|:in\\(|!=|>=|<=|\\*=|=|>|<)`,
  'y',
);
const DELIM = /[\s()"]/;
/**
 * `name:` where a term starts, other than `level:`, `stream:` and a field's `:exists` or `:in(`: a prefix the
 * syntax does not have (`msg:"cache miss"`). Refused rather than searched for as text, which is rarely what was
 * meant. A colon followed by `/` (`http://…`) is text.
 */
const UNKNOWN_PREFIX = /([A-Za-z_][\w.-]*):(?!\/)/y;

function unknownPrefix(name: string, text: string, after: number): string {
  const rest = text.slice(after).match(/^("(?:[^"\\]|\\.)*"|[^\s()"]+)?/)?.[0] || '"…"';
  return (
    `unknown prefix ${name}: (the prefixes are level: and stream:). ` +
    `For a JSON field write ${name}=${rest} or ${name}*=${rest}; to search for the text, quote it: "${name}:"`
  );
}

class Parser {
  pos = 0;
  constructor(readonly text: string) {}

  get peek(): string {
    return this.text.charAt(this.pos);
  }
  atBoundary(at = this.pos): boolean {
    return at >= this.text.length || DELIM.test(this.text.charAt(at));
  }
  skip(): void {
    while (/\s/.test(this.peek)) this.pos++;
  }
  boundary(): void {
    if (!this.atBoundary()) throw new Fail(`expected a space before ${JSON.stringify(this.peek)}`, this.pos);
  }
  keyword(word: string): boolean {
    if (!this.text.startsWith(word, this.pos) || !this.atBoundary(this.pos + word.length)) return false;
    this.pos += word.length;
    return true;
  }
  run(stop: RegExp): string {
    const start = this.pos;
    while (this.pos < this.text.length && !stop.test(this.peek)) this.pos++;
    return this.text.slice(start, this.pos);
  }

  parseOr(): FilterNode {
    const nodes = [this.parseAnd()];
    while (this.keyword('OR')) nodes.push(this.parseAnd());
    return nodes.length === 1 ? nodes[0]! : { kind: 'or', nodes };
  }

  parseAnd(): FilterNode {
    const nodes: FilterNode[] = [];
    let and: number | undefined;
    for (;;) {
      this.skip();
      const start = this.pos;
      if (this.pos >= this.text.length || this.peek === ')' || this.keyword('OR')) {
        this.pos = start;
        if (nodes.length === 0 || and !== undefined) throw new Fail('expected a term', start);
        return nodes.length === 1 ? nodes[0]! : { kind: 'and', nodes };
      }
      if (this.keyword('AND')) {
        if (nodes.length === 0 || and !== undefined) throw new Fail('AND needs a term on each side', start);
        and = start;
        continue;
      }
      nodes.push(this.parseUnary());
      and = undefined;
    }
  }

  parseUnary(): FilterNode {
    const start = this.pos;
    if (this.peek === '-') {
      this.pos++;
      if (this.pos >= this.text.length || /[\s)]/.test(this.text.charAt(this.pos)))
        throw new Fail("expected a term right after '-'", start);
      return { kind: 'not', node: this.parseUnary() };
    }
    if (this.keyword('NOT')) {
      this.skip();
      if (this.pos >= this.text.length || this.peek === ')') throw new Fail('expected a term after NOT', start);
      return { kind: 'not', node: this.parseUnary() };
    }
    return this.parsePrimary();
  }

  parsePrimary(): FilterNode {
    const start = this.pos;
    const c = this.peek;
    if (c === '(') {
      this.pos++;
      const node = this.parseOr();
      this.skip();
      if (this.peek !== ')') throw new Fail(`expected ')' to close the '(' at ${start + 1}`, this.pos);
      this.pos++;
      return node;
    }
    if (c === ')') throw new Fail("unexpected ')'", start);
    if (c === '"') return this.text_('contains', this.quoted());
    if (c === '=' || c === '^' || c === '~') {
      this.pos++;
      if (this.peek !== '"') throw new Fail(`expected a quoted string right after '${c}'`, this.pos);
      return this.text_(c === '=' ? 'equals' : c === '^' ? 'startsWith' : 'regex', this.quoted());
    }
    if (c === '/') return this.text_('regex', this.regexLiteral());
    const lower = this.text.slice(this.pos, this.pos + 7).toLowerCase();
    if (c === '@') return this.field(true);
    if (lower.startsWith('level:')) return this.levels();
    if (lower === 'stream:') return this.stream();
    FIELD_HEAD.lastIndex = this.pos;
    if (FIELD_HEAD.test(this.text)) return this.field(false);
    UNKNOWN_PREFIX.lastIndex = this.pos;
    const unknown = UNKNOWN_PREFIX.exec(this.text);
    if (unknown !== null) throw new Fail(unknownPrefix(unknown[1]!, this.text, UNKNOWN_PREFIX.lastIndex), start);
    const word = this.run(DELIM);
    return word === '*' ? { kind: 'all' } : { kind: 'text', op: 'contains', value: word };
  }

  quoted(): string {
    const start = this.pos;
    let i = start + 1;
    while (i < this.text.length && this.text.charAt(i) !== '"') i += this.text.charAt(i) === '\\' ? 2 : 1;
    if (i >= this.text.length) throw new Fail('unterminated quoted string', start);
    this.pos = i + 1;
    try {
      return JSON.parse(this.text.slice(start, i + 1)) as string;
    } catch {
      throw new Fail('invalid quoted string (it is read as a JSON string)', start);
    }
  }

  regexLiteral(): string {
    const start = this.pos;
    let i = start + 1;
    while (i < this.text.length && this.text.charAt(i) !== '/') i += this.text.charAt(i) === '\\' ? 2 : 1;
    if (i >= this.text.length) throw new Fail('unterminated regex (write a / inside it as \\/)', start);
    this.pos = i + 1;
    return this.text.slice(start + 1, i);
  }

  text_(op: 'contains' | 'equals' | 'startsWith' | 'regex', value: string): FilterNode {
    let caseSensitive: boolean | undefined;
    if ((this.peek === 'c' || this.peek === 'i') && this.atBoundary(this.pos + 1)) {
      caseSensitive = this.peek === 'c';
      this.pos++;
    }
    this.boundary();
    return caseSensitive === undefined ? { kind: 'text', op, value } : { kind: 'text', op, value, caseSensitive };
  }

  levels(): FilterNode {
    this.pos += 'level:'.length;
    const levels: Level[] = [];
    for (;;) {
      const at = this.pos;
      const name = this.run(/[\s()",]/).toUpperCase();
      const level = LEVELS.find((l) => l === name);
      if (level === undefined) throw new Fail(`expected a level (${LEVELS.join(', ').toLowerCase()})`, at);
      if (levels.includes(level)) throw new Fail(`level ${name.toLowerCase()} is repeated`, at);
      levels.push(level);
      if (this.peek !== ',') break;
      this.pos++;
    }
    return { kind: 'level', levels };
  }

  stream(): FilterNode {
    this.pos += 'stream:'.length;
    const at = this.pos;
    const value = this.peek === '"' ? this.quoted() : this.run(/[\s()"]/);
    const bareStar = this.text.charAt(at) !== '"' && value.endsWith('*');
    const prefix = bareStar || this.peek === '*';
    if (this.peek === '*') this.pos++;
    this.boundary();
    if (value === '' && !prefix && this.text.charAt(at) !== '"')
      throw new Fail('expected a stream name, or * for any', at);
    return { kind: 'stream', op: prefix ? 'prefix' : 'equals', value: bareStar ? value.slice(0, -1) : value };
  }

  field(forced: boolean): FilterNode {
    if (forced) this.pos++;
    FIELD_HEAD.lastIndex = this.pos;
    const m = FIELD_HEAD.exec(this.text);
    if (m === null) throw new Fail('expected a JSON field predicate like user.id=42 or code:exists', this.pos);
    const path = m.groups!.path!;
    const spelled = m.groups!.op!;
    const op = OPS[spelled]!;
    this.pos = FIELD_HEAD.lastIndex;
    if (op === 'exists') {
      this.boundary();
      return { kind: 'field', path, op };
    }
    if (op === 'in') {
      const value: FilterScalar[] = [];
      for (;;) {
        this.skip();
        value.push(this.value(/[\s()",]/));
        this.skip();
        if (this.peek !== ',') break;
        this.pos++;
      }
      if (this.peek !== ')') throw new Fail("expected ',' or ')' in the list", this.pos);
      this.pos++;
      this.boundary();
      return { kind: 'field', path, op, value };
    }
    const at = this.pos;
    const value = this.value(DELIM);
    this.boundary();
    if (op === 'eq' || op === 'neq' || op === 'contains') return { kind: 'field', path, op, value };
    if (typeof value !== 'string' && typeof value !== 'number')
      throw new Fail(`${spelled} needs a number or a string`, at);
    return { kind: 'field', path, op, value };
  }

  value(stop: RegExp): FilterScalar {
    if (this.peek === '"') return this.quoted();
    const at = this.pos;
    const raw = this.run(stop);
    if (raw === '') throw new Fail('expected a value', at);
    if (raw === 'true' || raw === 'false') return raw === 'true';
    if (raw === 'null') return null;
    return NUMBER.test(raw) ? Number(raw) : raw;
  }
}

/** Parses the one-line syntax (see the comment above) into a filter tree; `at` is a 0-based offset. */
export function parseFilterText(text: string): FilterTextResult {
  const parser = new Parser(text);
  try {
    parser.skip();
    if (parser.pos >= text.length) return { ok: true, filter: { kind: 'all' } };
    const filter = parser.parseOr();
    parser.skip();
    if (parser.pos < text.length) throw new Fail("unexpected ')'", parser.pos);
    return { ok: true, filter };
  } catch (error) {
    if (error instanceof Fail) return { ok: false, error: error.message, at: error.at };
    throw error;
  }
}
