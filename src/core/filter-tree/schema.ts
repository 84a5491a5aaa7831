import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { literalUnion as literals, LogLevelSchema } from '../enums.js';
import { FIELD_OPS, FIELD_PATH_PATTERN, FILTER_LIMITS, NODE_KINDS, STREAM_OPS, TEXT_OPS } from './limits.js';

export { FIELD_OPS, FIELD_PATH_PATTERN, FILTER_LIMITS, NODE_KINDS, STREAM_OPS, TEXT_OPS };

/** Limits of docs/design.md#2-log-query; `parseFilter` enforces all of them, the schema those JSON Schema can state. */

const strict = { additionalProperties: false } as const;

const Text = Type.String({ maxLength: FILTER_LIMITS.maxValueLength });
const Scalar = Type.Union([Text, Type.Number(), Type.Boolean(), Type.Null()]);
const FieldPath = Type.String({ pattern: FIELD_PATH_PATTERN, maxLength: FILTER_LIMITS.maxPathLength });

export const LevelNodeSchema = Type.Object(
  { kind: Type.Literal('level'), levels: Type.Array(LogLevelSchema, { minItems: 1, uniqueItems: true }) },
  strict,
);

export const TextNodeSchema = Type.Object(
  {
    kind: Type.Literal('text'),
    op: literals(TEXT_OPS),
    value: Text,
    caseSensitive: Type.Optional(Type.Boolean()),
  },
  {
    ...strict,
    description: `On the message. Case-insensitive unless caseSensitive is true; a regex is RE2 syntax, at most ${FILTER_LIMITS.maxRegexLength} characters.`,
  },
);

const fieldBase = { kind: Type.Literal('field'), path: FieldPath };

/** One object per operator family, so `value` is required (and typed) exactly where it means something. */
export const FieldNodeSchema = Type.Union([
  Type.Object({ ...fieldBase, op: Type.Literal('exists') }, strict),
  Type.Object({ ...fieldBase, op: literals(['eq', 'neq', 'contains'] as const), value: Scalar }, strict),
  Type.Object(
    { ...fieldBase, op: literals(['gt', 'gte', 'lt', 'lte'] as const), value: Type.Union([Text, Type.Number()]) },
    strict,
  ),
  Type.Object(
    {
      ...fieldBase,
      op: Type.Literal('in'),
      value: Type.Array(Scalar, { minItems: 1, maxItems: FILTER_LIMITS.maxInValues }),
    },
    strict,
  ),
]);

export const StreamNodeSchema = Type.Object(
  {
    kind: Type.Literal('stream'),
    op: literals(STREAM_OPS),
    value: Type.String({ maxLength: FILTER_LIMITS.maxStreamValueLength }),
  },
  strict,
);

export const AllNodeSchema = Type.Object({ kind: Type.Literal('all') }, strict);

const quoted = (values: readonly string[]) => values.map((v) => JSON.stringify(v)).join('|');

/** The filter grammar in a sentence: the description of the schema and of the log query's `filter` property. */
const FILTER_DESCRIPTION =
  'Filter tree. Nodes: {kind:"all"} | {kind:"and"|"or", nodes:[…]} | {kind:"not", node} | {kind:"level", levels:[…]} | ' +
  `{kind:"text", op:${quoted(TEXT_OPS)}, value, caseSensitive?} | ` +
  `{kind:"field", path:"a.b", op:${quoted(FIELD_OPS)}, value?} | ` +
  `{kind:"stream", op:${quoted(STREAM_OPS)}, value}. Depth ≤ ${FILTER_LIMITS.maxDepth}, ≤ ${FILTER_LIMITS.maxNodes} nodes, ` +
  `regex ≤ ${FILTER_LIMITS.maxRegexLength} characters (RE2).`;

/**
 * The structured filter of `POST /cloud/logs/logs-insights` (docs/design.md#2-log-query): the grammar's one source.
 * Its limits and operators are the constants of limits.ts, which `parseFilter` enforces; depth, node count, regex
 * validity and string well-formedness are checked by `parseFilter` only (JSON Schema cannot state them), so the
 * request schema takes just this schema's description and the service parses the filter.
 */
export const FilterNodeSchema = Type.Recursive(
  (Self) =>
    Type.Union([
      AllNodeSchema,
      Type.Object({ kind: Type.Literal('and'), nodes: Type.Array(Self, { minItems: 1 }) }, strict),
      Type.Object({ kind: Type.Literal('or'), nodes: Type.Array(Self, { minItems: 1 }) }, strict),
      Type.Object({ kind: Type.Literal('not'), node: Self }, strict),
      LevelNodeSchema,
      TextNodeSchema,
      FieldNodeSchema,
      StreamNodeSchema,
    ]),
  { $id: 'LogFilterNode', title: 'LogFilterNode', description: FILTER_DESCRIPTION },
) satisfies TSchema;

export type AllNode = Static<typeof AllNodeSchema>;
export type LevelNode = Static<typeof LevelNodeSchema>;
export type TextNode = Static<typeof TextNodeSchema>;
export type FieldNode = Static<typeof FieldNodeSchema>;
export type StreamNode = Static<typeof StreamNodeSchema>;
export type FilterScalar = string | number | boolean | null;

/** The types are written out (not `Static<>` of the recursive schema) so narrowing on `kind` works. */
export interface AndNode {
  kind: 'and';
  nodes: FilterNode[];
}
export interface OrNode {
  kind: 'or';
  nodes: FilterNode[];
}
export interface NotNode {
  kind: 'not';
  node: FilterNode;
}

/** A predicate on one row; `all` is the constant TRUE. */
export type FilterLeaf = LevelNode | TextNode | FieldNode | StreamNode;
export type FilterNode = AllNode | AndNode | OrNode | NotNode | FilterLeaf;
export type FieldOp = (typeof FIELD_OPS)[number];

export const TRUE: FilterNode = { kind: 'all' };
/** There is no FALSE node kind: FALSE is written `not all`. */
export const FALSE: FilterNode = { kind: 'not', node: { kind: 'all' } };

export function isLeaf(node: FilterNode): node is FilterLeaf {
  return node.kind === 'level' || node.kind === 'text' || node.kind === 'field' || node.kind === 'stream';
}
