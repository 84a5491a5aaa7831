/**
 * The parsed form of a CloudWatch Logs filter pattern. Plain data (no compiled
 * regexes, no functions) so it can be logged, compared in tests and compiled
 * later by `evaluate.ts`.
 */

/** A `%regex%` operand. `re2` is the translation of AWS's subset into RE2 syntax. */
export interface RegexOperand {
  kind: 'regex';
  /** The text between the two `%`, as written. */
  source: string;
  re2: string;
  /** Offset of the opening `%` in the pattern. */
  position: number;
}

/**
 * A string operand. A `*` at the start or the end is a wildcard (`anyBefore`,
 * `anyAfter`); a `*` anywhere else is a literal asterisk.
 */
export interface StringOperand {
  kind: 'string';
  text: string;
  anyBefore: boolean;
  anyAfter: boolean;
}

export interface NumberOperand {
  kind: 'number';
  value: number;
  /** As written, so `= 400` also equals the string "400". */
  text: string;
}

export type Operand = RegexOperand | StringOperand | NumberOperand;

export type ComparisonOperator = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type SelectorSegment = { kind: 'key'; key: string } | { kind: 'index'; index: number } | { kind: 'wildcard' };

export interface JsonSelector {
  /** As written, e.g. `$.users[0].email`. */
  text: string;
  segments: SelectorSegment[];
}

export type JsonTest = 'null' | 'true' | 'false' | 'not-exists';

export type JsonExpression =
  | { kind: 'and'; operands: JsonExpression[] }
  | { kind: 'or'; operands: JsonExpression[] }
  | { kind: 'compare'; selector: JsonSelector; operator: ComparisonOperator; operand: Operand }
  | { kind: 'test'; selector: JsonSelector; test: JsonTest };

export type FieldCondition =
  | { kind: 'and'; operands: FieldCondition[] }
  | { kind: 'or'; operands: FieldCondition[] }
  | { kind: 'compare'; operator: ComparisonOperator; operand: Operand };

export type DelimitedField =
  | { kind: 'ellipsis' }
  /** `name` is '' for the unnamed field a trailing comma stands for. */
  | { kind: 'field'; name: string; condition?: FieldCondition };

export type FilterPatternAst =
  /** Empty or blank pattern. */
  | { kind: 'all' }
  /**
   * Unstructured terms. `optional` are the `?term`s: AWS ignores them when the
   * pattern also has required or excluded terms.
   */
  | { kind: 'terms'; required: string[]; excluded: string[]; optional: string[] }
  | { kind: 'regex'; regex: RegexOperand }
  | { kind: 'json'; expression: JsonExpression }
  | { kind: 'delimited'; fields: DelimitedField[] };
