/**
 * Case-insensitive matching of the filter tree: two characters are equal
 * ignoring case when they belong to the same simple case-folding class
 * (Unicode CaseFolding.txt, statuses C and S — what `/…/iu` uses in
 * JavaScript and `(?i)` in RE2). Folding maps one code point to one code
 * point, so "contains", "equals" and "startsWith" on folded strings are exact.
 *
 * The classes are derived from the JavaScript engine: characters related by
 * single-code-point upper/lower mappings are joined when `/^x$/iu` confirms
 * it, so a class never holds two characters JavaScript tells apart. The SQL
 * and Insights compilers spell a folded character as the bracket of its whole
 * class, so every backend uses this one table.
 */

// Every cased character of Unicode 15 is below U+1F000 (Adlam ends at U+1E95F).
const LAST_CASED = 0x1ffff;

interface FoldTable {
  /** Code point → smallest code point of its class, for classes of two or more. */
  rep: Map<number, number>;
  /** Smallest code point → every member of the class, ascending. */
  members: Map<number, number[]>;
}

let table: FoldTable | undefined;

function singleCodePoint(s: string): number | undefined {
  const cp = s.codePointAt(0);
  return cp !== undefined && String.fromCodePoint(cp).length === s.length ? cp : undefined;
}

function buildTable(): FoldTable {
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let root = x;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(x, root);
    return root;
  };
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(Math.max(ra, rb), Math.min(ra, rb));
  };
  // Characters whose uppercase is several code points (ΐ U+0390 and U+1FD3,
  // ﬅ and ﬆ) are only related through that string, so they are bucketed by it.
  const byUpper = new Map<string, number[]>();
  for (let cp = 0; cp <= LAST_CASED; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const s = String.fromCodePoint(cp);
    const lower = s.toLowerCase();
    const upper = s.toUpperCase();
    if (lower === s && upper === s) continue;
    const same = new RegExp(`^\\u{${cp.toString(16)}}$`, 'iu');
    for (const candidate of [lower, upper, upper.toLowerCase(), lower.toUpperCase()]) {
      const other = singleCodePoint(candidate);
      if (other !== undefined && other !== cp && same.test(candidate)) union(cp, other);
    }
    if (singleCodePoint(upper) === undefined) {
      const bucket = byUpper.get(upper) ?? [];
      for (const other of bucket) if (same.test(String.fromCodePoint(other))) union(cp, other);
      bucket.push(cp);
      byUpper.set(upper, bucket);
      parent.set(cp, find(cp));
    }
  }
  const rep = new Map<number, number>();
  const members = new Map<number, number[]>();
  for (const cp of [...parent.keys()].sort((a, b) => a - b)) {
    const root = find(cp);
    rep.set(cp, root);
    const list = members.get(root) ?? [];
    list.push(cp);
    members.set(root, list);
  }
  for (const [root, list] of members) {
    if (list.length < 2) {
      members.delete(root);
      rep.delete(root);
    }
  }
  return { rep, members };
}

function foldTable(): FoldTable {
  table ??= buildTable();
  return table;
}

/**
 * Builds the classes now (a tenth to a quarter of a second of CPU, once per process) rather than in the first
 * request that folds case, where it would hold the event loop: a server calls this at start.
 */
export function prepareCaseFolding(): void {
  foldTable();
}

/** The representative of `cp`'s class (its smallest member). */
export function foldCodePoint(cp: number): number {
  // ASCII letters: the uppercase letter is the smallest member (K U+212A and ſ U+017F join k and s).
  if (cp < 0x80) return cp >= 0x61 && cp <= 0x7a ? cp - 0x20 : cp;
  return foldTable().rep.get(cp) ?? cp;
}

/** Every code point equal to `cp` ignoring case, ascending (just `[cp]` for uncased characters). */
export function foldClass(cp: number): readonly number[] {
  return foldTable().members.get(foldCodePoint(cp)) ?? [cp];
}

/** `s` with every code point replaced by its representative. */
export function foldString(s: string): string {
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return s.toUpperCase();
  let out = '';
  for (const ch of s) out += String.fromCodePoint(foldCodePoint(ch.codePointAt(0)!));
  return out;
}

/** Whether some character of `value` has another case: if not, case-insensitive matching is plain matching. */
export function hasCaseVariants(value: string): boolean {
  for (const ch of value) if (foldClass(ch.codePointAt(0)!).length > 1) return true;
  return false;
}

/*
 * The same classes spelled for SQL, where the only folding both PostgreSQL and PGlite do alike is
 * `lower(x COLLATE "C")`: ASCII A–Z to a–z and nothing else (under any other collation `lower()`
 * follows the database's ctype, and e.g. lowers İ U+0130 to i where simple folding keeps it apart).
 * Each class is spelled by one member, its *canonical* member: the lowercase one (k for K, k and
 * the Kelvin sign U+212A; σ for Σ, σ and ς), else its smallest. `lower(x COLLATE "C")` moves the
 * ASCII members there; the non-ASCII ones are moved by `replace` (`sqlFoldPairs`).
 */

const canonical = new Map<number, number>();

/** The canonical member of `cp`'s class (`cp` itself for an uncased character). */
export function canonicalCodePoint(cp: number): number {
  if (cp < 0x80) return cp >= 0x41 && cp <= 0x5a ? cp + 0x20 : cp;
  let c = canonical.get(cp);
  if (c === undefined) {
    const members = foldClass(cp);
    const lower = singleCodePoint(String.fromCodePoint(members[0]!).toLowerCase());
    c = lower !== undefined && members.includes(lower) ? lower : members[0]!;
    for (const m of members) canonical.set(m, c);
  }
  return c;
}

/** `s` with every code point replaced by its canonical member: what `foldString` tells apart, this does too. */
export function canonicalString(s: string): string {
  let out = '';
  for (const ch of s) out += String.fromCodePoint(canonicalCodePoint(ch.codePointAt(0)!));
  return out;
}

/**
 * The non-ASCII members of the classes of `value`'s characters that are not their class's canonical
 * member, each with that member, added to `into`: after replacing each of these by its image and
 * lowering ASCII, a string holds the canonical member wherever it held any member of those classes.
 */
export function sqlFoldPairs(value: string, into: Map<number, number> = new Map()): Map<number, number> {
  for (const ch of value) {
    const members = foldClass(ch.codePointAt(0)!);
    if (members.length < 2) continue;
    const target = canonicalCodePoint(members[0]!);
    for (const m of members) if (m >= 0x80 && m !== target) into.set(m, target);
  }
  return into;
}
