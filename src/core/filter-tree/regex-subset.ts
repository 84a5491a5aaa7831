import { foldClass } from './case-fold.js';

/**
 * The part of RE2 syntax that other engines match identically once spelled
 * out explicitly. A user's regex is evaluated with re2js in process; it is
 * pushed to PostgreSQL (`~`) or Logs Insights (`like /…/`) only when it lies
 * in this subset, translated so that nothing depends on engine defaults:
 * `.` becomes `[^\n]` (RE2's dot skips only `\n`), `\d \w \s` become ASCII
 * brackets, case-insensitivity becomes brackets of whole folding classes
 * (no `(?i)`, whose Unicode coverage differs between engines), and every
 * ASCII punctuation character is backslash-escaped.
 *
 * Outside the subset: flags `(?i)`, named groups, `\b`, `\p{…}`, `\Q…\E`,
 * `\x…`, POSIX classes, repetition counts above 255 (PostgreSQL's limit),
 * patterns whose repetitions multiply past 1000, and control characters other
 * than `\n \t \r`.
 */

type Ranges = Array<[number, number]>;

export type RegexAst =
  | { t: 'set'; negated: boolean; ranges: Ranges }
  | { t: 'bol' }
  | { t: 'eol' }
  | { t: 'seq'; items: RegexAst[] }
  | { t: 'alt'; items: RegexAst[] }
  | { t: 'group'; body: RegexAst }
  | { t: 'repeat'; body: RegexAst; min: number; max: number | null };

const MAX_COUNT = 255;
const MAX_WEIGHT = 1000;
const _META = new Set('\\.+*?()[]{}|^$');
const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// RE2's \s is [\t\n\f\r ]: no vertical tab, unlike Java and PostgreSQL.
const SPACE: Ranges = [
  [0x09, 0x0a],
  [0x0c, 0x0d],
  [0x20, 0x20],
];
const PERL: Record<string, { ranges: Ranges; negated: boolean }> = {
  d: { ranges: DIGIT, negated: false },
  D: { ranges: DIGIT, negated: true },
  w: { ranges: WORD, negated: false },
  W: { ranges: WORD, negated: true },
  s: { ranges: SPACE, negated: false },
  S: { ranges: SPACE, negated: true },
};
const CONTROL_ESCAPES: Record<string, number> = { n: 0x0a, t: 0x09, r: 0x0d };

class OutsideSubset extends Error {}

function isAsciiPunct(cp: number): boolean {
  return cp > 0x20 && cp < 0x7f && !/[A-Za-z0-9]/.test(String.fromCharCode(cp));
}

function normalize(ranges: Ranges): Ranges {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

function negate(ranges: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (const [lo, hi] of normalize(ranges)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= 0x10ffff) out.push([next, 0x10ffff]);
  return out;
}

/** Adds every case-folding partner of every member; ranges must be ASCII (checked by the parser). */
function foldRanges(ranges: Ranges): Ranges {
  const out: Ranges = [...ranges];
  for (const [lo, hi] of ranges) {
    for (let cp = lo; cp <= hi; cp++) for (const m of foldClass(cp)) if (m !== cp) out.push([m, m]);
  }
  return normalize(out);
}

class Parser {
  private i = 0;
  private readonly cps: number[];

  constructor(
    pattern: string,
    private readonly caseInsensitive: boolean,
  ) {
    this.cps = [...pattern].map((c) => c.codePointAt(0)!);
  }

  parse(): RegexAst {
    const ast = this.alternation();
    if (this.i < this.cps.length) throw new OutsideSubset();
    return ast;
  }

  private peek(offset = 0): string | undefined {
    const cp = this.cps[this.i + offset];
    return cp === undefined ? undefined : String.fromCodePoint(cp);
  }

  private alternation(): RegexAst {
    const items = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      items.push(this.sequence());
    }
    return items.length === 1 ? items[0]! : { t: 'alt', items };
  }

  private sequence(): RegexAst {
    const items: RegexAst[] = [];
    for (let c = this.peek(); c !== undefined && c !== '|' && c !== ')'; c = this.peek()) {
      const atom = this.atom();
      items.push(this.quantified(atom));
    }
    return { t: 'seq', items };
  }

  private quantified(atom: RegexAst): RegexAst {
    const c = this.peek();
    let min: number;
    let max: number | null;
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      [min, max] = c === '*' ? [0, null] : c === '+' ? [1, null] : [0, 1];
    } else if (c === '{') {
      const counted = this.counted();
      if (!counted) return atom;
      [min, max] = counted;
    } else {
      return atom;
    }
    if (atom.t === 'bol' || atom.t === 'eol') throw new OutsideSubset();
    // A lazy repetition matches the same strings as a greedy one.
    if (this.peek() === '?') this.i++;
    const next = this.peek();
    if (next === '*' || next === '+' || next === '?' || (next === '{' && this.counted(false)))
      throw new OutsideSubset();
    return { t: 'repeat', body: atom, min, max };
  }

  /** `{n}`, `{n,}` or `{n,m}` at the cursor; anything else is RE2's literal `{`. */
  private counted(consume = true): [number, number | null] | undefined {
    const rest = String.fromCodePoint(...this.cps.slice(this.i, this.i + 16));
    const m = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (!m) return undefined;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? null : Number(m[3]);
    if (min > MAX_COUNT || (max !== null && (max > MAX_COUNT || max < min))) throw new OutsideSubset();
    if (consume) this.i += m[0].length;
    return [min, max];
  }

  private atom(): RegexAst {
    const c = this.peek()!;
    this.i++;
    switch (c) {
      case '(': {
        if (this.peek() === '?') {
          if (this.peek(1) !== ':') throw new OutsideSubset();
          this.i += 2;
        }
        const body = this.alternation();
        if (this.peek() !== ')') throw new OutsideSubset();
        this.i++;
        return { t: 'group', body };
      }
      case '[':
        return this.bracket();
      case '.':
        return { t: 'set', negated: true, ranges: [[0x0a, 0x0a]] };
      case '^':
        return { t: 'bol' };
      case '$':
        return { t: 'eol' };
      case '\\':
        return this.escape(false);
      case '*':
      case '+':
      case '?':
        throw new OutsideSubset();
      default:
        return this.literal(this.cps[this.i - 1]!);
    }
  }

  private literal(cp: number): RegexAst {
    if (cp < 0x20 || cp === 0x7f) throw new OutsideSubset();
    return this.set([[cp, cp]], false);
  }

  private set(ranges: Ranges, negated: boolean): RegexAst {
    if (this.caseInsensitive) {
      if (ranges.some(([lo, hi]) => lo > 0x7f || hi > 0x7f)) throw new OutsideSubset();
      return { t: 'set', negated, ranges: foldRanges(ranges) };
    }
    return { t: 'set', negated, ranges: normalize(ranges) };
  }

  private escape(inBracket: boolean): RegexAst {
    const c = this.peek();
    if (c === undefined) throw new OutsideSubset();
    this.i++;
    const perl = PERL[c];
    if (perl)
      return inBracket ? { t: 'set', negated: perl.negated, ranges: perl.ranges } : this.set(perl.ranges, perl.negated);
    const control = CONTROL_ESCAPES[c];
    if (control !== undefined) return this.set([[control, control]], false);
    const cp = c.codePointAt(0)!;
    if (isAsciiPunct(cp)) return this.set([[cp, cp]], false);
    throw new OutsideSubset();
  }

  /** One bracket member at the cursor: a code point, or a Perl class given as ranges. */
  private bracketItem(): number | Ranges {
    const c = this.peek();
    if (c === undefined) throw new OutsideSubset();
    this.i++;
    if (c === '\\') {
      const item = this.escape(true);
      if (item.t !== 'set') throw new OutsideSubset();
      if (item.negated) return negate(item.ranges);
      return item.ranges.length === 1 && item.ranges[0]![0] === item.ranges[0]![1] ? item.ranges[0]![0] : item.ranges;
    }
    if (c === '[' && this.peek() === ':') throw new OutsideSubset();
    const cp = c.codePointAt(0)!;
    if (cp < 0x20 || cp === 0x7f) throw new OutsideSubset();
    return cp;
  }

  private bracket(): RegexAst {
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.i++;
    }
    const ranges: Ranges = [];
    let first = true;
    while (this.peek() !== ']' || first) {
      if (this.peek() === undefined) throw new OutsideSubset();
      first = false;
      const lo = this.bracketItem();
      if (typeof lo === 'number' && this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.i++;
        const hi = this.bracketItem();
        if (typeof hi !== 'number' || hi < lo || lo > 0x7f || hi > 0x7f) throw new OutsideSubset();
        ranges.push([lo, hi]);
      } else if (typeof lo === 'number') {
        ranges.push([lo, lo]);
      } else {
        ranges.push(...lo);
      }
    }
    this.i++;
    return this.set(ranges, negated);
  }
}

function weight(ast: RegexAst): number {
  switch (ast.t) {
    case 'seq':
    case 'alt':
      return ast.items.reduce((sum, item) => sum + weight(item), 1);
    case 'group':
      return weight(ast.body);
    case 'repeat':
      return weight(ast.body) * Math.max(1, ast.max ?? ast.min);
    default:
      return 1;
  }
}

/** The pattern as an AST when it lies in the portable subset, else undefined. */
export function parseRegexSubset(pattern: string, caseInsensitive: boolean): RegexAst | undefined {
  try {
    const ast = new Parser(pattern, caseInsensitive).parse();
    return weight(ast) <= MAX_WEIGHT ? ast : undefined;
  } catch (error) {
    if (error instanceof OutsideSubset) return undefined;
    throw error;
  }
}

/** The AST of a literal string: matches exactly `value`, folded when `caseInsensitive`. */
export function literalRegex(value: string, caseInsensitive: boolean): RegexAst {
  const items: RegexAst[] = [];
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    const ranges: Ranges = caseInsensitive ? foldClass(cp).map((m) => [m, m] as [number, number]) : [[cp, cp]];
    items.push({ t: 'set', negated: false, ranges: normalize(ranges) });
  }
  return { t: 'seq', items };
}

export interface RegexDialect {
  /** How one code point is written, in or out of a bracket (it is never a bracket's `^`, `-` or `]` unescaped). */
  char(cp: number): string;
  /** End of text; undefined when the dialect has no spelling that means exactly that. */
  eol: string | undefined;
}

/** PostgreSQL ARE, passed as a bound parameter: non-ASCII characters are written as themselves. */
export const POSTGRES_REGEX: RegexDialect = {
  char: (cp) => escapeAscii(cp, (hex) => `\\u${hex.padStart(4, '0')}`) ?? String.fromCodePoint(cp),
  // Without the `n` flag PostgreSQL's `$` is the end of the string only, like RE2's.
  eol: '$',
};

/**
 * Java, RE2 and PCRE alike (Logs Insights does not say which engine it runs):
 * non-ASCII as `\x{…}`; `/` is escaped like all punctuation, so the pattern
 * fits in `/…/`. No end anchor: Java's `$` also matches before a final line
 * break.
 */
export const PORTABLE_REGEX: RegexDialect = {
  char: (cp) => escapeAscii(cp, (hex) => `\\x{${hex}}`) ?? `\\x{${cp.toString(16).toUpperCase()}}`,
  eol: undefined,
};

/** ASCII, written the same in every dialect except control characters; undefined above ASCII. */
function escapeAscii(cp: number, control: (hex: string) => string): string | undefined {
  if (cp === 0x0a) return '\\n';
  if (cp === 0x09) return '\\t';
  if (cp === 0x0d) return '\\r';
  if (cp < 0x20 || cp === 0x7f) return control(cp.toString(16).toUpperCase());
  if (cp === 0x20) return ' ';
  if (isAsciiPunct(cp)) return `\\${String.fromCharCode(cp)}`;
  if (cp < 0x80) return String.fromCharCode(cp);
  return undefined;
}

/** Writes the AST in `dialect`; undefined when it uses something the dialect cannot say exactly. */
export function emitRegex(ast: RegexAst, dialect: RegexDialect): string | undefined {
  const emit = (node: RegexAst): string => {
    switch (node.t) {
      case 'set': {
        const ranges = node.negated ? negate(node.ranges) : node.ranges;
        if (!node.negated && ranges.length === 1 && ranges[0]![0] === ranges[0]![1]) return dialect.char(ranges[0]![0]);
        if (ranges.length === 0) throw new OutsideSubset();
        if (node.negated) {
          return `[^${normalize(node.ranges)
            .map(([lo, hi]) => (lo === hi ? dialect.char(lo) : `${dialect.char(lo)}-${dialect.char(hi)}`))
            .join('')}]`;
        }
        return `[${ranges.map(([lo, hi]) => (lo === hi ? dialect.char(lo) : `${dialect.char(lo)}-${dialect.char(hi)}`)).join('')}]`;
      }
      case 'bol':
        return '^';
      case 'eol':
        if (dialect.eol === undefined) throw new OutsideSubset();
        return dialect.eol;
      case 'seq':
        return node.items.map(emit).join('');
      case 'alt':
        return node.items.map(emit).join('|');
      case 'group':
        return `(${emit(node.body)})`;
      case 'repeat': {
        const body = node.body.t === 'seq' || node.body.t === 'alt' ? `(${emit(node.body)})` : emit(node.body);
        const { min, max } = node;
        const suffix =
          max === null
            ? min === 0
              ? '*'
              : min === 1
                ? '+'
                : `{${min},}`
            : min === 0 && max === 1
              ? '?'
              : min === max
                ? `{${min}}`
                : `{${min},${max}}`;
        return body + suffix;
      }
    }
  };
  try {
    return emit(ast);
  } catch (error) {
    if (error instanceof OutsideSubset) return undefined;
    throw error;
  }
}

/** What a regex node says about the strings it matches: exactly one string, or substrings each match holds. */
interface LiteralInfo {
  /** The one string the node matches, when it matches exactly one. */
  exact: string | undefined;
  /** Substrings every match contains. */
  required: string[];
}

function literalInfo(ast: RegexAst): LiteralInfo {
  switch (ast.t) {
    case 'set':
      return !ast.negated && ast.ranges.length === 1 && ast.ranges[0]![0] === ast.ranges[0]![1]
        ? { exact: String.fromCodePoint(ast.ranges[0]![0]), required: [] }
        : { exact: undefined, required: [] };
    case 'bol':
    case 'eol':
      return { exact: '', required: [] };
    case 'group':
      return literalInfo(ast.body);
    case 'alt':
      // Each branch may match on its own: nothing is required of all of them (a common substring would be, but is rare).
      return { exact: undefined, required: [] };
    case 'repeat': {
      if (ast.min === 0) return { exact: undefined, required: [] };
      const body = literalInfo(ast.body);
      const required = body.exact ? [...body.required, body.exact] : body.required;
      return { exact: ast.min === 1 && ast.max === 1 ? body.exact : undefined, required };
    }
    case 'seq': {
      const required: string[] = [];
      let run = '';
      let exact = true;
      for (const item of ast.items) {
        const info = literalInfo(item);
        if (info.exact !== undefined) {
          run += info.exact;
          continue;
        }
        exact = false;
        if (run !== '') required.push(run);
        run = '';
        required.push(...info.required);
      }
      if (exact) return { exact: run, required };
      if (run !== '') required.push(run);
      return { exact: undefined, required };
    }
  }
}

/**
 * Substrings every match of the RE2 pattern contains, read case-sensitively (a case-insensitive
 * match contains each of them up to case folding). Empty when the pattern is outside the subset
 * `parseRegexSubset` reads — its flags, classes and escapes could change what a character means.
 */
export function requiredLiterals(pattern: string): string[] {
  let ast: RegexAst;
  try {
    ast = new Parser(pattern, false).parse();
  } catch (error) {
    if (error instanceof OutsideSubset) return [];
    throw error;
  }
  const info = literalInfo(ast);
  const all = info.exact ? [...info.required, info.exact] : info.required;
  return [...new Set(all.filter((s) => s.length > 0))];
}
