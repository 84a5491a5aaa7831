import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type RawBuilder,
} from 'kysely';
import { canonicalString, foldClass, hasCaseVariants, sqlFoldPairs } from './case-fold.js';
import type { FilterCapabilities } from './plan.js';
import { relax, simplifyFilter } from './plan.js';
import { requiredLiterals } from './regex-subset.js';
import {
  TRUE,
  isLeaf,
  type FieldNode,
  type FilterLeaf,
  type FilterNode,
  type FilterScalar,
  type TextNode,
} from './schema.js';

/**
 * Column names of the event table. `message`, `level` and `log_stream` must
 * be NOT NULL; `json` is the message's JSON object as jsonb, NULL for any
 * other message (`parseJsonMessage`).
 */
export interface SqlFilterColumns {
  message: string;
  level: string;
  logStream: string;
  json: string;
}

const DEFAULT_COLUMNS: SqlFilterColumns = { message: 'message', level: 'level', logStream: 'log_stream', json: 'json' };

/*
 * JSON numbers compare as the doubles JSON.parse makes of them. jsonb keeps
 * the exact decimal and numeric → float8 raises an error outside the double
 * range, so the rounding JavaScript does there is spelled out: at or beyond
 * the halfway point to 2^1024 a number is ±Infinity, at or below half the
 * smallest subnormal (2^-1075) it is 0 (ties go to even in both cases).
 */
const HALF_PAST_MAX = (2n ** 1024n - 2n ** 970n).toString();
const HALF_MIN_SUBNORMAL = `0.${(5n ** 1075n).toString().padStart(1075, '0')}`;

function double(x: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(CASE WHEN jsonb_typeof(${x}) = 'number' THEN
    CASE WHEN abs((${x})::numeric) >= ${sql.raw(HALF_PAST_MAX)} THEN sign((${x})::numeric)::float8 * 'Infinity'::float8
         WHEN abs((${x})::numeric) <= ${sql.raw(HALF_MIN_SUBNORMAL)} THEN 0::float8
         ELSE ((${x})::numeric)::float8 END END)`;
}

/*
 * Case-insensitive text. `matches` compares simple case folds (case-fold.ts), which no SQL function
 * computes alike on PostgreSQL and PGlite: `lower()` and ILIKE follow the collation's ctype (PGlite
 * lowers İ U+0130 to i, simple folding keeps it apart). What both do alike is `lower(x COLLATE "C")`,
 * ASCII only, and `replace`, code point for code point. So the message is folded as
 *
 *   fold(m) = lower(replace(…replace(m COLLATE "C", s1, t1)…, sn, tn))
 *
 * where s1…sn are the non-ASCII members of the folding classes of the value's characters, each mapped to
 * its class's canonical member ti (`sqlFoldPairs`), and compared with the value's canonical spelling
 * (`canonicalString`) by `strpos`, `=` or `starts_with`. Exact: every character c of the message becomes
 * a member of its own class (ti is one, and lowering an ASCII letter stays in its class); one of the
 * value's classes becomes its canonical member. So a character of the message becomes the value's
 * canonical character at that position exactly when the two share a class: the folded strings match
 * where the simple folds match, position for position (UTF-8 matches byte strings on character
 * boundaries). A message without a non-ASCII character (octet_length = length) needs no `replace`.
 *
 * Its cost is a pass over the message per `replace` and one for `lower`, and none at all to prepare: no
 * pattern is compiled, where the regex of folding classes this replaces compiled per leaf per statement
 * (and per row once more than PostgreSQL's 32 cached regexes were in use). The `replace`s a leaf needs are
 * bounded (MAX_LEAF_FOLD_CHARS: a longer list is pushed as a prefilter, the leaf applied in process); two
 * leaves or more share one folded message per row (`shareFold`), whose list is bounded per statement
 * (MAX_STATEMENT_FOLD_CHARS: `compileBoundedSqlFilter` relaxes leaves beyond it).
 */

/** Non-ASCII characters the folding of one case-insensitive leaf may `replace` in SQL (a Cyrillic alphabet: 33). */
export const MAX_LEAF_FOLD_CHARS = 48;
/** Non-ASCII characters the shared folding of one statement may `replace`. */
export const MAX_STATEMENT_FOLD_CHARS = 128;

/** A case-insensitive text leaf SQL compares on the folded message: its value has case variants. */
function foldsCase(node: FilterNode): boolean {
  return node.kind === 'text' && node.op !== 'regex' && node.caseSensitive !== true && hasCaseVariants(node.value);
}

/** The case-insensitive leaves of `node` that SQL folds. */
function foldingLeaves(node: FilterNode): number {
  if (foldsCase(node)) return 1;
  if (node.kind === 'not') return foldingLeaves(node.node);
  if (node.kind === 'and' || node.kind === 'or') return node.nodes.reduce((n, child) => n + foldingLeaves(child), 0);
  return 0;
}

/** The `replace` pairs of every folding leaf of `node`, added to `into`: how many there are. */
function foldPairsOf(node: FilterNode, into: Map<number, number>): number {
  if (node.kind === 'text') {
    if (foldsCase(node)) sqlFoldPairs(node.value, into);
  } else if (node.kind === 'not') foldPairsOf(node.node, into);
  else if (node.kind === 'and' || node.kind === 'or') for (const child of node.nodes) foldPairsOf(child, into);
  return into.size;
}

/** `fold(message)` with these pairs (see above); the characters are letters of the folding table, never quotes. */
function foldedMessage(message: RawBuilder<unknown>, pairs: Map<number, number>): RawBuilder<string> {
  const c = sql`${message} COLLATE "C"`;
  if (pairs.size === 0) return sql<string>`lower(${c})`;
  let replaced = c;
  for (const [from, to] of [...pairs].sort((a, b) => a[0] - b[0])) {
    replaced = sql`replace(${replaced}, ${sql.lit(String.fromCodePoint(from))}, ${sql.lit(String.fromCodePoint(to))})`;
  }
  return sql<string>`(CASE WHEN octet_length(${message}) = length(${message}) THEN lower(${c}) ELSE lower(${replaced}) END)`;
}

/**
 * For a case-insensitive leaf whose folding needs more than `budget` `replace`s: the same op on the longest
 * piece of its value that needs at most `budget` — a prefix for `equals` and `startsWith` (as `startsWith`),
 * any piece for `contains`; TRUE when there is none. Every row the leaf matches matches it.
 */
export function foldPrefilter(leaf: TextNode, budget = MAX_LEAF_FOLD_CHARS): FilterNode {
  if (!foldsCase(leaf) || sqlFoldPairs(leaf.value).size <= budget) return leaf;
  const chars = [...leaf.value];
  const cost = chars.map((ch) => sqlFoldPairs(ch).size);
  const key = chars.map((ch) => canonicalString(ch));
  const inWindow = new Map<string, number>();
  let best: [number, number] = [0, 0];
  for (let i = 0, j = 0, total = 0; j < chars.length; j++) {
    const seen = inWindow.get(key[j]!) ?? 0;
    if (seen === 0) total += cost[j]!;
    inWindow.set(key[j]!, seen + 1);
    while (total > budget) {
      const left = (inWindow.get(key[i]!) ?? 1) - 1;
      inWindow.set(key[i]!, left);
      if (left === 0) total -= cost[i]!;
      i++;
    }
    if (leaf.op !== 'contains' && i > 0) break;
    if (j + 1 - i > best[1] - best[0]) best = [i, j + 1];
  }
  if (best[1] === best[0]) return TRUE;
  const value = chars.slice(best[0], best[1]).join('');
  return { kind: 'text', op: leaf.op === 'contains' ? 'contains' : 'startsWith', value };
}

/**
 * Whether `compileSqlFilter` says this leaf exactly and cheaply: every leaf but a user's regex and a
 * case-insensitive text whose folding needs more than MAX_LEAF_FOLD_CHARS characters mapped. A regex
 * never runs in PostgreSQL's backtracking engine (docs/design.md#2-log-query): it is evaluated with RE2 in process, and
 * only its required literals (`regexPrefilter`) narrow the rows the database returns; such a text is
 * evaluated in process too, behind the longest piece of it that fits (`foldPrefilter`).
 */
export function canPushToSql(leaf: FilterLeaf): boolean {
  if (leaf.kind !== 'text') return true;
  if (leaf.op === 'regex') return false;
  return !foldsCase(leaf) || sqlFoldPairs(leaf.value).size <= MAX_LEAF_FOLD_CHARS;
}

/** Literals the database may look for before RE2 runs: at most this many, the longest. */
const MAX_PREFILTER_LITERALS = 3;
/** Exact spellings one case-insensitive literal may expand to (each a `strpos`, much cheaper than a regex). */
const MAX_CASE_VARIANTS = 4;

/**
 * The longest piece of `literal` whose case variants number at most MAX_CASE_VARIANTS, as every
 * exact spelling of it: a case-insensitive match of the literal contains one of them.
 */
function caseVariants(literal: string): string[] {
  const classes = [...literal].map((ch) => foldClass(ch.codePointAt(0)!).map((cp) => String.fromCodePoint(cp)));
  let best: [number, number] = [0, 0];
  for (let i = 0, j = 0, product = 1; j < classes.length; j++) {
    product *= classes[j]!.length;
    while (product > MAX_CASE_VARIANTS) product /= classes[i++]!.length;
    if (j + 1 - i > best[1] - best[0]) best = [i, j + 1];
  }
  let variants = [''];
  for (const members of classes.slice(best[0], best[1])) variants = variants.flatMap((v) => members.map((m) => v + m));
  return variants.filter((v) => v !== '');
}

/**
 * A pushable filter every row matching a regex leaf also matches, made of `strpos` tests only:
 * the regex's required literals (a match contains each of them; case-insensitively, one of the
 * exact spellings of a piece of each), or TRUE when it has none.
 */
export function regexPrefilter(leaf: FilterLeaf): FilterNode {
  if (leaf.kind !== 'text' || leaf.op !== 'regex') return TRUE;
  const caseSensitive = leaf.caseSensitive === true;
  const contains = (value: string): FilterNode => ({ kind: 'text', op: 'contains', value, caseSensitive: true });
  const pieces = requiredLiterals(leaf.value)
    .map((literal) => (caseSensitive ? [literal] : caseVariants(literal)))
    .filter((spellings) => spellings.length > 0)
    .sort((a, b) => b[0]!.length - a[0]!.length)
    .slice(0, MAX_PREFILTER_LITERALS);
  const nodes = pieces.map(
    (spellings): FilterNode =>
      spellings.length === 1 ? contains(spellings[0]!) : { kind: 'or', nodes: spellings.map(contains) },
  );
  if (nodes.length === 0) return TRUE;
  return nodes.length === 1 ? nodes[0]! : { kind: 'and', nodes };
}

/** What the database may test for a leaf `canPushToSql` refuses: a pushable filter every row matching it matches. */
export function sqlPrefilter(leaf: FilterLeaf): FilterNode {
  if (leaf.kind === 'text' && leaf.op !== 'regex') return foldPrefilter(leaf);
  return regexPrefilter(leaf);
}

export const sqlCapabilities: FilterCapabilities = {
  backend: 'the local log store',
  canPush: canPushToSql,
  canApplyInProcess: () => true,
  prefilter: sqlPrefilter,
};

class SqlCompiler {
  /** The folded message of the enclosing shared scope (`shareFold`): what its case-insensitive leaves compare. */
  private folded: RawBuilder<string> | undefined;

  constructor(private readonly columns: SqlFilterColumns) {}

  /** The whole filter: its case-insensitive leaves share one folded message when there are two or more. */
  root(node: FilterNode): RawBuilder<boolean> {
    return foldingLeaves(node) >= 2 ? this.shareFold(node) : this.node(node);
  }

  /**
   * `node`, holding two case-insensitive leaves or more, with one folded copy of the message for all of them:
   * the lowest `and`/`or` holding them evaluates its other children first, then those holding them inside one
   * scalar subquery over `fold(message)` (OFFSET 0 keeps the planner from pulling the subquery up, which would
   * copy the expression into every leaf again). and/or have no side effects and never yield NULL here, so
   * reordering their children changes nothing but the work done.
   */
  private shareFold(node: FilterNode): RawBuilder<boolean> {
    if (node.kind === 'not') return sql<boolean>`(NOT ${this.shareFold(node.node)})`;
    if (node.kind !== 'and' && node.kind !== 'or') return this.node(node);
    const op = sql.raw(node.kind === 'and' ? ' AND ' : ' OR ');
    const folding = node.nodes.filter((child) => foldingLeaves(child) > 0);
    const parts = node.nodes.filter((child) => foldingLeaves(child) === 0).map((child) => this.node(child));
    if (folding.length === 1) {
      parts.push(this.shareFold(folding[0]!));
    } else {
      const pairs = new Map<number, number>();
      for (const child of folding) foldPairsOf(child, pairs);
      this.folded = sql<string>`(berth_fold.folded COLLATE "C")`;
      const inner = sql.join(
        folding.map((child) => this.node(child)),
        op,
      );
      this.folded = undefined;
      const message = sql.ref(this.columns.message);
      parts.push(
        sql<boolean>`(SELECT ${inner} FROM (SELECT ${foldedMessage(message, pairs)} AS folded OFFSET 0) AS berth_fold)`,
      );
    }
    return parts.length === 1 ? parts[0]! : sql<boolean>`(${sql.join(parts, op)})`;
  }

  node(node: FilterNode): RawBuilder<boolean> {
    switch (node.kind) {
      case 'all':
        return sql<boolean>`true`;
      case 'not':
        return sql<boolean>`(NOT ${this.node(node.node)})`;
      case 'and':
      case 'or':
        return sql<boolean>`(${sql.join(
          node.nodes.map((child) => this.node(child)),
          sql.raw(node.kind === 'and' ? ' AND ' : ' OR '),
        )})`;
      case 'level':
        return sql<boolean>`(${sql.ref(this.columns.level)} IN (${sql.join(node.levels)}))`;
      case 'stream': {
        const column = sql.ref(this.columns.logStream);
        return node.op === 'equals'
          ? sql<boolean>`(${column} = ${node.value})`
          : sql<boolean>`starts_with(${column}, ${node.value})`;
      }
      case 'text':
        return this.text(node);
      case 'field':
        return this.field(node);
    }
  }

  private text(node: TextNode): RawBuilder<boolean> {
    if (node.op === 'regex') throw new Error('compileSqlFilter: a regex is never pushed to SQL; plan the filter first');
    const message = sql.ref(this.columns.message);
    if (!foldsCase(node)) {
      if (node.op === 'contains') return sql<boolean>`(strpos(${message}, ${node.value}) > 0)`;
      if (node.op === 'equals') return sql<boolean>`(${message} = ${node.value})`;
      return sql<boolean>`starts_with(${message}, ${node.value})`;
    }
    // Both sides spelled by canonical members (see "Case-insensitive text" above): exact, no pattern to compile.
    const subject = this.folded ?? foldedMessage(message, sqlFoldPairs(node.value));
    const value = canonicalString(node.value);
    if (node.op === 'contains') return sql<boolean>`(strpos(${subject}, ${value}) > 0)`;
    if (node.op === 'equals') return sql<boolean>`(${subject} = ${value})`;
    return sql<boolean>`starts_with(${subject}, ${value})`;
  }

  /** Every branch answers true or false, never NULL: a NULL under NOT would drop the row from both sides. */
  private field(node: FieldNode): RawBuilder<boolean> {
    // The path is one array parameter, however many segments it has.
    const x = sql`(${sql.ref(this.columns.json)} #> ${node.path.split('.')}::text[])`;
    switch (node.op) {
      case 'exists':
        return sql<boolean>`(${x} IS NOT NULL)`;
      case 'eq':
        return this.equals(x, node.value);
      case 'neq':
        return sql<boolean>`(${x} IS NOT NULL AND NOT ${this.equals(x, node.value)})`;
      case 'in':
        return this.in(x, node.value);
      case 'contains':
        return this.contains(x, node.value);
      default: {
        const op = sql.raw({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[node.op]);
        if (typeof node.value === 'number') {
          return sql<boolean>`COALESCE(${double(x)} ${op} ${node.value}::float8, false)`;
        }
        return sql<boolean>`(CASE WHEN jsonb_typeof(${x}) = 'string' THEN (${x} #>> '{}') COLLATE "C" ${op} ${node.value}::text ELSE false END)`;
      }
    }
  }

  private equals(x: RawBuilder<unknown>, value: FilterScalar): RawBuilder<boolean> {
    if (typeof value === 'number') return sql<boolean>`COALESCE(${double(x)} = ${value}::float8, false)`;
    return sql<boolean>`COALESCE(${x} = ${this.jsonScalar(value)}, false)`;
  }

  /** One array parameter per JSON type, so a long list costs neither parameters nor text per value. */
  private in(x: RawBuilder<unknown>, values: FilterScalar[]): RawBuilder<boolean> {
    const numbers = values.filter((v): v is number => typeof v === 'number');
    const others = values.filter((v) => typeof v !== 'number').map((v) => JSON.stringify(v));
    const parts: RawBuilder<boolean>[] = [];
    if (numbers.length > 0) parts.push(sql<boolean>`COALESCE(${double(x)} = ANY(${numbers}::float8[]), false)`);
    if (others.length > 0) parts.push(sql<boolean>`COALESCE(${x} = ANY(${others}::jsonb[]), false)`);
    return sql<boolean>`(${sql.join(parts, sql.raw(' OR '))})`;
  }

  private jsonScalar(value: string | boolean | null): RawBuilder<unknown> {
    if (value === null) return sql`'null'::jsonb`;
    return typeof value === 'string' ? sql`to_jsonb(${value}::text)` : sql`to_jsonb(${value}::boolean)`;
  }

  private contains(x: RawBuilder<unknown>, value: FilterScalar): RawBuilder<boolean> {
    if (typeof value === 'number') {
      return sql<boolean>`(CASE WHEN jsonb_typeof(${x}) = 'array' THEN EXISTS (
        SELECT 1 FROM jsonb_array_elements(${x}) AS element(v) WHERE ${double(sql`element.v`)} = ${value}::float8) ELSE false END)`;
    }
    // jsonb containment of a one-element array is element equality for strings, booleans and null.
    const inArray = sql`${x} @> jsonb_build_array(${this.jsonScalar(value)})`;
    if (typeof value === 'string') {
      return sql<boolean>`(CASE jsonb_typeof(${x}) WHEN 'string' THEN strpos(${x} #>> '{}', ${value}) > 0 WHEN 'array' THEN ${inArray} ELSE false END)`;
    }
    return sql<boolean>`(CASE WHEN jsonb_typeof(${x}) = 'array' THEN ${inArray} ELSE false END)`;
  }
}

/**
 * Compiles a planned (`pushed`) filter to a boolean SQL expression over the
 * event table, exactly equivalent to `matches`. Throws on a leaf
 * `canPushToSql` rejects: plan the filter with `sqlCapabilities` first.
 */
export function compileSqlFilter(node: FilterNode, columns: Partial<SqlFilterColumns> = {}): RawBuilder<boolean> {
  return new SqlCompiler({ ...DEFAULT_COLUMNS, ...columns }).root(simplifyFilter(node));
}

/** How big one statement built from a request may get (`MAX_SQL_PARAMS`, `MAX_SQL_BYTES`). */
export interface SqlBounds {
  maxParams: number;
  maxBytes: number;
}

/** Compiles SQL text without a connection, only to measure it. */
const measurer = new Kysely<never>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

export interface SqlSize {
  params: number;
  bytes: number;
}

export function sqlSize(expression: RawBuilder<unknown>): SqlSize {
  const compiled = expression.compile(measurer);
  return { params: compiled.parameters.length, bytes: compiled.sql.length };
}

const fits = (size: SqlSize, bounds: SqlBounds) => size.params <= bounds.maxParams && size.bytes <= bounds.maxBytes;
const foldFits = (node: FilterNode) => foldPairsOf(node, new Map()) <= MAX_STATEMENT_FOLD_CHARS;

/**
 * `compileSqlFilter` within `bounds`, its shared case folding within MAX_STATEMENT_FOLD_CHARS. When the
 * whole filter is too big, its costliest leaves are relaxed by the sound-drop rule (FALSE under an odd
 * number of `not`s; under an even one TRUE, or for a case-insensitive text the longest piece of its value
 * that needs no `replace`) until it fits: the database then returns a superset, which the caller must
 * filter exactly in process (the log query always applies the effective filter to every row). `relaxed`
 * counts them.
 */
export function compileBoundedSqlFilter(
  node: FilterNode,
  bounds: SqlBounds,
  columns: Partial<SqlFilterColumns> = {},
): { where: RawBuilder<boolean>; relaxed: number } {
  const compile = (n: FilterNode) => compileSqlFilter(n, columns);
  let where = compile(node);
  if (fits(sqlSize(where), bounds) && foldFits(node)) return { where, relaxed: 0 };

  const leaves: { leaf: FilterLeaf; cost: number }[] = [];
  const collect = (n: FilterNode): void => {
    if (isLeaf(n)) {
      const size = sqlSize(compile(n));
      // Normalized so one over-budget dimension weighs as much as another.
      const folds = foldPairsOf(n, new Map()) / MAX_STATEMENT_FOLD_CHARS;
      leaves.push({ leaf: n, cost: size.params / bounds.maxParams + size.bytes / bounds.maxBytes + folds });
    } else if (n.kind === 'not') collect(n.node);
    else if (n.kind === 'and' || n.kind === 'or') n.nodes.forEach(collect);
  };
  collect(node);
  leaves.sort((a, b) => b.cost - a.cost);
  // A case-insensitive leaf that needs `replace`s gives way to the longest piece of its value that needs none (an
  // ASCII word of a long value of many scripts), smaller in every dimension; any other leaf to TRUE.
  const widen = (leaf: FilterLeaf): FilterNode =>
    leaf.kind === 'text' && foldsCase(leaf) && sqlFoldPairs(leaf.value).size > 0 ? foldPrefilter(leaf, 0) : TRUE;

  const dropped = new Set<FilterLeaf>();
  // Halving steps: a handful of compiles even for 256 leaves.
  for (let take = 1; ; take *= 2) {
    for (const { leaf } of leaves.slice(0, take)) dropped.add(leaf);
    const relaxedTree = relax(
      node,
      '',
      false,
      (leaf) => !dropped.has(leaf),
      () => undefined,
      widen,
    );
    where = compile(relaxedTree);
    const fitting = fits(sqlSize(where), bounds) && foldFits(relaxedTree);
    if (fitting || dropped.size === leaves.length) {
      if (!fitting) return { where: sql<boolean>`true`, relaxed: leaves.length };
      return { where, relaxed: dropped.size };
    }
  }
}
