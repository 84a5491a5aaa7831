import type { RE2JS } from 're2js';
import type { DelimitedField, FieldCondition, FilterPatternAst, JsonExpression, Operand, RegexOperand } from './ast.js';
import { compareValue, type CompiledOperand } from './compare.js';
import { parseJsonEvent, resolveSelector, type JsonValue } from './json-event.js';
import { splitLogFields, type LogField } from './log-fields.js';
import { compileRegexOrFail } from './regex.js';
import { patternError } from './scanner.js';

export type EventPredicate = (message: string) => boolean;

function compileRegex(operand: RegexOperand): RE2JS {
  return compileRegexOrFail(operand, (reason) => {
    throw patternError(reason, operand.position);
  });
}

function compileOperand(operand: Operand): CompiledOperand {
  return operand.kind === 'regex' ? { kind: 'regex', regex: compileRegex(operand) } : operand;
}

/** AWS's "Match everything" example is the quoted blank `" "`. */
function containsTerm(message: string, term: string): boolean {
  return term.trim() === '' || message.includes(term);
}

function compileTerms(required: string[], excluded: string[], optional: string[]): EventPredicate {
  // AWS: "If you combine ? with other filter patterns, all question mark terms will be ignored."
  if (required.length > 0 || excluded.length > 0) {
    return (message) =>
      required.every((term) => containsTerm(message, term)) && !excluded.some((term) => containsTerm(message, term));
  }
  return (message) => optional.some((term) => containsTerm(message, term));
}

/** Value nodes are strings and numbers; arrays, objects, booleans and null never compare. */
function isValueNode(value: JsonValue): value is string | number {
  return typeof value === 'string' || typeof value === 'number';
}

type JsonPredicate = (root: { [key: string]: JsonValue }) => boolean;

function compileJson(expression: JsonExpression): JsonPredicate {
  switch (expression.kind) {
    case 'and': {
      const operands = expression.operands.map(compileJson);
      return (root) => operands.every((operand) => operand(root));
    }
    case 'or': {
      const operands = expression.operands.map(compileJson);
      return (root) => operands.some((operand) => operand(root));
    }
    case 'compare': {
      const { selector, operator } = expression;
      const operand = compileOperand(expression.operand);
      return (root) =>
        resolveSelector(root, selector).some((node) => isValueNode(node) && compareValue(node, operator, operand));
    }
    case 'test': {
      const { selector, test } = expression;
      if (test === 'not-exists') return (root) => resolveSelector(root, selector).length === 0;
      const expected = test === 'null' ? null : test === 'true';
      return (root) => resolveSelector(root, selector).some((node) => node === expected);
    }
  }
}

type FieldPredicate = (value: string) => boolean;

function compileFieldCondition(condition: FieldCondition): FieldPredicate {
  switch (condition.kind) {
    case 'and': {
      const operands = condition.operands.map(compileFieldCondition);
      return (value) => operands.every((operand) => operand(value));
    }
    case 'or': {
      const operands = condition.operands.map(compileFieldCondition);
      return (value) => operands.some((operand) => operand(value));
    }
    case 'compare': {
      const { operator } = condition;
      const operand = compileOperand(condition.operand);
      return (value) => compareValue(value, operator, operand);
    }
  }
}

function compileField(field: Extract<DelimitedField, { kind: 'field' }>): FieldPredicate {
  return field.condition === undefined ? () => true : compileFieldCondition(field.condition);
}

/**
 * Without `...`, fields align with the event's fields and the last one takes
 * the rest of the line (so `[w1=ERROR, w2]` matches a long ERROR line). With
 * `...`, the fields before it align with the first event fields, the fields
 * after it with the last ones, and it absorbs what lies between.
 */
function compileDelimited(fields: DelimitedField[]): EventPredicate {
  const ellipsis = fields.findIndex((field) => field.kind === 'ellipsis');
  const compile = (list: DelimitedField[]): FieldPredicate[] =>
    list.flatMap((field) => (field.kind === 'field' ? [compileField(field)] : []));
  if (ellipsis < 0) {
    const predicates = compile(fields);
    return (message) => {
      const values = splitLogFields(message);
      if (values.length < predicates.length) return false;
      return predicates.every((predicate, i) => {
        const last = i === predicates.length - 1;
        return predicate(last ? restOfLine(message, values, i) : (values[i] as LogField).value);
      });
    };
  }
  const before = compile(fields.slice(0, ellipsis));
  const after = compile(fields.slice(ellipsis + 1));
  return (message) => {
    const values = splitLogFields(message);
    if (values.length < before.length + after.length) return false;
    const offset = values.length - after.length;
    return (
      before.every((predicate, i) => predicate((values[i] as LogField).value)) &&
      after.every((predicate, i) => predicate((values[offset + i] as LogField).value))
    );
  };
}

function restOfLine(message: string, values: LogField[], from: number): string {
  const first = values[from] as LogField;
  if (from === values.length - 1) return first.value;
  return message.slice(first.start, (values[values.length - 1] as LogField).end);
}

/** Turns a parsed pattern into a predicate on event messages. Never throws on a message. */
export function compileAst(ast: FilterPatternAst): EventPredicate {
  switch (ast.kind) {
    case 'all':
      return () => true;
    case 'terms':
      return compileTerms(ast.required, ast.excluded, ast.optional);
    case 'regex': {
      const regex = compileRegex(ast.regex);
      return (message) => regex.test(message);
    }
    case 'json': {
      const predicate = compileJson(ast.expression);
      return (message) => {
        const root = parseJsonEvent(message);
        return root !== undefined && predicate(root);
      };
    }
    case 'delimited':
      return compileDelimited(ast.fields);
  }
}
