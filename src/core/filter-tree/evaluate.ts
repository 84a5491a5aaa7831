import { RE2JS } from 're2js';
import type { Level } from '../log-level.js';
import { foldString } from './case-fold.js';
import { isMissing, lookupField, scalarCompare, scalarEquals } from './json-field.js';
import type { FieldNode, FilterNode, TextNode } from './schema.js';

/** What a filter sees of one log event. */
export interface FilterRow {
  message: string;
  level: Level;
  logStream: string;
  /** The message parsed as a JSON object (`parseJsonMessage`); undefined for any other message. */
  json?: unknown;
}

const compiled = new WeakMap<TextNode, RE2JS>();
const folded = new WeakMap<TextNode, string>();

function regexOf(node: TextNode): RE2JS {
  let re = compiled.get(node);
  if (re === undefined) {
    re = RE2JS.compile(node.value, node.caseSensitive === true ? 0 : RE2JS.CASE_INSENSITIVE);
    compiled.set(node, re);
  }
  return re;
}

function foldedValue(node: TextNode): string {
  let value = folded.get(node);
  if (value === undefined) {
    value = foldString(node.value);
    folded.set(node, value);
  }
  return value;
}

function matchesText(node: TextNode, message: string): boolean {
  if (node.op === 'regex') return regexOf(node).test(message);
  const caseSensitive = node.caseSensitive === true;
  const subject = caseSensitive ? message : foldString(message);
  const value = caseSensitive ? node.value : foldedValue(node);
  switch (node.op) {
    case 'contains':
      return subject.includes(value);
    case 'equals':
      return subject === value;
    case 'startsWith':
      return subject.startsWith(value);
  }
}

function matchesField(node: FieldNode, json: unknown): boolean {
  const value = lookupField(json, node.path);
  if (isMissing(value)) return false;
  switch (node.op) {
    case 'exists':
      return true;
    case 'eq':
      return scalarEquals(value, node.value);
    case 'neq':
      return !scalarEquals(value, node.value);
    case 'in':
      return node.value.some((v) => scalarEquals(value, v));
    case 'contains': {
      const needle = node.value;
      if (typeof value === 'string') return typeof needle === 'string' && value.includes(needle);
      return Array.isArray(value) && value.some((element) => scalarEquals(element, needle));
    }
    default:
      return scalarCompare(value, node.op, node.value);
  }
}

/**
 * The exact meaning of a filter tree, which every backend must reproduce for
 * what it pushes (see docs/log-filter-capabilities.md):
 * - text ops look at the whole message; case-insensitive unless
 *   `caseSensitive: true`, by simple case folding (`case-fold.ts`); a regex is
 *   RE2 (re2js), unanchored, `(?i)` when case-insensitive.
 * - field ops need the message to be a JSON object holding the path; every
 *   op, `neq` included, is false when the field is missing. Values compare
 *   by JSON type, no coercion; ordering is numeric for numbers and by code
 *   point for strings; `contains` is a case-sensitive substring test on a
 *   string and element equality on an array.
 * - `stream` compares the log stream name exactly (`prefix` = starts with).
 */
export function matches(node: FilterNode, row: FilterRow): boolean {
  switch (node.kind) {
    case 'all':
      return true;
    case 'and':
      return node.nodes.every((child) => matches(child, row));
    case 'or':
      return node.nodes.some((child) => matches(child, row));
    case 'not':
      return !matches(node.node, row);
    case 'level':
      return node.levels.includes(row.level);
    case 'text':
      return matchesText(node, row.message);
    case 'field':
      return matchesField(node, row.json);
    case 'stream':
      return node.op === 'equals' ? row.logStream === node.value : row.logStream.startsWith(node.value);
  }
}
