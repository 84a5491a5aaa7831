import { sql, type RawBuilder } from 'kysely';
import { hasCaseVariants } from './case-fold.js';
import type { FilterCapabilities } from './plan.js';
import { simplifyFilter } from './plan.js';
import { POSTGRES_REGEX, emitRegex, literalRegex, parseRegexSubset, type RegexAst } from './regex-subset.js';
import type { FieldNode, FilterLeaf, FilterNode, FilterScalar, TextNode } from './schema.js';

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

function textRegex(node: TextNode): RegexAst | undefined {
  const caseInsensitive = node.caseSensitive !== true;
  if (node.op === 'regex') return parseRegexSubset(node.value, caseInsensitive);
  const literal = literalRegex(node.value, caseInsensitive);
  const bol: RegexAst = { t: 'bol' };
  const eol: RegexAst = { t: 'eol' };
  if (node.op === 'contains') return literal;
  return { t: 'seq', items: node.op === 'equals' ? [bol, literal, eol] : [bol, literal] };
}

/** Whether `compileSqlFilter` can say this leaf exactly: all but regexes outside the portable subset. */
export function canPushToSql(leaf: FilterLeaf): boolean {
  if (leaf.kind !== 'text' || leaf.op !== 'regex') return true;
  const ast = textRegex(leaf);
  return ast !== undefined && emitRegex(ast, POSTGRES_REGEX) !== undefined;
}

export const sqlCapabilities: FilterCapabilities = {
  backend: 'the local log store',
  canPush: canPushToSql,
  canApplyInProcess: () => true,
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
        return node.op === 'equals' ? sql<boolean>`(${column} = ${node.value})` : sql<boolean>`starts_with(${column}, ${node.value})`;
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
    const ast = textRegex(node);
    const pattern = ast && emitRegex(ast, POSTGRES_REGEX);
    if (pattern === undefined) throw new Error(`compileSqlFilter: regex ${JSON.stringify(node.value)} is not pushable; plan the filter first`);
    return sql<boolean>`(${message} ~ ${pattern})`;
  }

  /** Every branch answers true or false, never NULL: a NULL under NOT would drop the row from both sides. */
  private field(node: FieldNode): RawBuilder<boolean> {
    const x = sql`(${sql.ref(this.columns.json)} #> ARRAY[${sql.join(node.path.split('.'))}]::text[])`;
    switch (node.op) {
      case 'exists':
        return sql<boolean>`(${x} IS NOT NULL)`;
      case 'eq':
        return this.equals(x, node.value);
      case 'neq':
        return sql<boolean>`(${x} IS NOT NULL AND NOT ${this.equals(x, node.value)})`;
      case 'in':
        return sql<boolean>`(${sql.join(
          node.value.map((v) => this.equals(x, v)),
          sql.raw(' OR '),
        )})`;
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
