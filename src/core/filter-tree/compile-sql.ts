import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type RawBuilder,
} from 'kysely';
import { foldClass, hasCaseVariants } from './case-fold.js';
import type { FilterCapabilities } from './plan.js';
import { relax, simplifyFilter } from './plan.js';
import { POSTGRES_REGEX, emitRegex, literalRegex, requiredLiterals, type RegexAst } from './regex-subset.js';
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

function textRegex(node: TextNode): RegexAst {
  const literal = literalRegex(node.value, node.caseSensitive !== true);
  const bol: RegexAst = { t: 'bol' };
  const eol: RegexAst = { t: 'eol' };
  if (node.op === 'contains') return literal;
  return { t: 'seq', items: node.op === 'equals' ? [bol, literal, eol] : [bol, literal] };
}

/**
 * Whether `compileSqlFilter` can say this leaf exactly: every leaf but a user's regex. A regex never
 * runs in PostgreSQL's backtracking engine (DESIGN §6): it is evaluated with RE2 in process, and
 * only its required literals (`regexPrefilter`) narrow the rows the database returns.
 */
export function canPushToSql(leaf: FilterLeaf): boolean {
  return !(leaf.kind === 'text' && leaf.op === 'regex');
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

export const sqlCapabilities: FilterCapabilities = {
  backend: 'the local log store',
  canPush: canPushToSql,
  canApplyInProcess: () => true,
  prefilter: regexPrefilter,
};

class SqlCompiler {
  constructor(private readonly columns: SqlFilterColumns) {}

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
    const message = sql.ref(this.columns.message);
    if (node.op !== 'regex' && (node.caseSensitive === true || !hasCaseVariants(node.value))) {
      if (node.op === 'contains') return sql<boolean>`(strpos(${message}, ${node.value}) > 0)`;
      if (node.op === 'equals') return sql<boolean>`(${message} = ${node.value})`;
      return sql<boolean>`starts_with(${message}, ${node.value})`;
    }
    if (node.op === 'regex') throw new Error('compileSqlFilter: a regex is never pushed to SQL; plan the filter first');
    // A literal spelled as folding-class brackets: no repetition, nothing for an engine to backtrack on.
    const pattern = emitRegex(textRegex(node), POSTGRES_REGEX);
    if (pattern === undefined) throw new Error(`compileSqlFilter: cannot spell ${JSON.stringify(node.value)}`);
    return sql<boolean>`(${message} ~ ${pattern})`;
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
  return new SqlCompiler({ ...DEFAULT_COLUMNS, ...columns }).node(simplifyFilter(node));
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

/**
 * `compileSqlFilter` within `bounds`. When the whole filter is too big, its costliest leaves are
 * relaxed by the sound-drop rule (TRUE under an even number of `not`s, FALSE under an odd one)
 * until it fits: the database then returns a superset, which the caller must filter exactly in
 * process (the log query always applies the effective filter to every row). `relaxed` counts them.
 */
export function compileBoundedSqlFilter(
  node: FilterNode,
  bounds: SqlBounds,
  columns: Partial<SqlFilterColumns> = {},
): { where: RawBuilder<boolean>; relaxed: number } {
  const compile = (n: FilterNode) => compileSqlFilter(n, columns);
  let where = compile(node);
  if (fits(sqlSize(where), bounds)) return { where, relaxed: 0 };

  const leaves: { leaf: FilterLeaf; cost: number }[] = [];
  const collect = (n: FilterNode): void => {
    if (isLeaf(n)) {
      const size = sqlSize(compile(n));
      // Normalized so one over-budget dimension weighs as much as the other.
      leaves.push({ leaf: n, cost: size.params / bounds.maxParams + size.bytes / bounds.maxBytes });
    } else if (n.kind === 'not') collect(n.node);
    else if (n.kind === 'and' || n.kind === 'or') n.nodes.forEach(collect);
  };
  collect(node);
  leaves.sort((a, b) => b.cost - a.cost);

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
    );
    where = compile(relaxedTree);
    if (fits(sqlSize(where), bounds) || dropped.size === leaves.length) {
      if (!fits(sqlSize(where), bounds)) return { where: sql<boolean>`true`, relaxed: leaves.length };
      return { where, relaxed: dropped.size };
    }
  }
}
