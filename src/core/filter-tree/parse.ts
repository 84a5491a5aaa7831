import { RE2JS } from 're2js';
import { appError, listDetail } from '../errors.js';
import { LEVELS, type Level } from '../log-level.js';
import {
  FIELD_OPS,
  FIELD_PATH_PATTERN,
  FILTER_LIMITS,
  NODE_KINDS,
  STREAM_OPS,
  TEXT_OPS,
  type FilterNode,
  type FilterScalar,
} from './schema.js';

const MAX_FAULTS = 50;
const PATH_RE = new RegExp(FIELD_PATH_PATTERN);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const ALLOWED: Record<(typeof NODE_KINDS)[number], readonly string[]> = {
  all: ['kind'],
  and: ['kind', 'nodes'],
  or: ['kind', 'nodes'],
  not: ['kind', 'node'],
  level: ['kind', 'levels'],
  text: ['kind', 'op', 'value', 'caseSensitive'],
  field: ['kind', 'path', 'op', 'value'],
  stream: ['kind', 'op', 'value'],
};

class Faults {
  readonly items: string[] = [];
  total = 0;
  nodes = 0;
  tooMany = false;

  add(path: string, problem: string) {
    this.total++;
    if (this.items.length < MAX_FAULTS) this.items.push(`${path}: ${problem}`);
    else if (this.items.length === MAX_FAULTS) this.items.push('…and more problems not listed');
  }
}

function key(path: string, name: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
}

function has(record: Record<string, unknown>, name: string): boolean {
  return Object.hasOwn(record, name);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function oneOf(values: readonly string[]): string {
  return `must be one of ${values.join(', ')}`;
}

/** A string PostgreSQL and Logs Insights can carry: no U+0000, no lone surrogate. */
function checkString(value: unknown, path: string, faults: Faults, maxLength: number): value is string {
  if (typeof value !== 'string') {
    faults.add(path, 'must be a string');
    return false;
  }
  if (value.length > maxLength) faults.add(path, `must be at most ${maxLength} characters`);
  else if (value.includes('\u0000')) faults.add(path, 'must not contain the character U+0000');
  else if (LONE_SURROGATE.test(value)) faults.add(path, 'must be well-formed Unicode (it has a lone surrogate)');
  else return true;
  return false;
}

function checkScalar(value: unknown, path: string, faults: Faults): value is FilterScalar {
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return true;
    faults.add(path, 'must be a finite number');
    return false;
  }
  if (typeof value === 'string') return checkString(value, path, faults, FILTER_LIMITS.maxValueLength);
  faults.add(path, 'must be a string, number, boolean or null');
  return false;
}

function checkOp<T extends string>(
  node: Record<string, unknown>,
  path: string,
  ops: readonly T[],
  faults: Faults,
): T | undefined {
  if (!has(node, 'op')) faults.add(`${path}.op`, 'is required');
  else if (typeof node.op !== 'string' || !ops.includes(node.op as T)) faults.add(`${path}.op`, oneOf(ops));
  else return node.op as T;
  return undefined;
}

function parseChildren(value: unknown, path: string, depth: number, faults: Faults): FilterNode[] | undefined {
  if (!Array.isArray(value)) {
    faults.add(path, value === undefined ? 'is required' : 'must be an array of filter nodes');
    return undefined;
  }
  if (value.length === 0) {
    faults.add(path, 'must hold at least one node');
    return undefined;
  }
  const nodes: FilterNode[] = [];
  // The node budget stops the loop too, so a 100k-wide array costs 256 steps.
  for (let i = 0; i < value.length && !faults.tooMany; i++) {
    const child = parseNode(value[i], `${path}[${i}]`, depth + 1, faults);
    if (child) nodes.push(child);
  }
  return nodes.length === value.length ? nodes : undefined;
}

function parseLevels(value: unknown, path: string, faults: Faults): Level[] | undefined {
  if (!Array.isArray(value)) {
    faults.add(path, value === undefined ? 'is required' : 'must be an array of levels');
    return undefined;
  }
  if (value.length === 0) faults.add(path, 'must hold at least one level');
  let ok = value.length > 0;
  const seen = new Set<unknown>();
  value.slice(0, LEVELS.length + 1).forEach((level, i) => {
    if (typeof level !== 'string' || !LEVELS.includes(level as Level)) {
      faults.add(`${path}[${i}]`, oneOf(LEVELS));
      ok = false;
    } else if (seen.has(level)) {
      faults.add(`${path}[${i}]`, 'repeats an earlier level');
      ok = false;
    }
    seen.add(level);
  });
  if (value.length > LEVELS.length) ok = false;
  return ok ? (value as Level[]) : undefined;
}

function parseText(node: Record<string, unknown>, path: string, faults: Faults): FilterNode | undefined {
  const op = checkOp(node, path, TEXT_OPS, faults);
  let caseSensitive: boolean | undefined;
  let ok = true;
  if (has(node, 'caseSensitive')) {
    if (typeof node.caseSensitive === 'boolean') caseSensitive = node.caseSensitive;
    else {
      faults.add(`${path}.caseSensitive`, 'must be a boolean');
      ok = false;
    }
  }
  const max = op === 'regex' ? FILTER_LIMITS.maxRegexLength : FILTER_LIMITS.maxValueLength;
  const valuePath = `${path}.value`;
  if (!has(node, 'value')) {
    faults.add(valuePath, 'is required');
    return undefined;
  }
  if (!checkString(node.value, valuePath, faults, max) || op === undefined || !ok) return undefined;
  if (op === 'regex') {
    try {
      RE2JS.compile(node.value);
    } catch (error) {
      faults.add(
        valuePath,
        `is not a valid RE2 regular expression (${error instanceof Error ? error.message : String(error)})`,
      );
      return undefined;
    }
  }
  return caseSensitive === undefined
    ? { kind: 'text', op, value: node.value }
    : { kind: 'text', op, value: node.value, caseSensitive };
}

function parseField(node: Record<string, unknown>, path: string, faults: Faults): FilterNode | undefined {
  let ok = true;
  const fieldPath = node.path;
  if (!has(node, 'path')) {
    faults.add(`${path}.path`, 'is required');
    ok = false;
  } else if (
    typeof fieldPath !== 'string' ||
    fieldPath.length > FILTER_LIMITS.maxPathLength ||
    !PATH_RE.test(fieldPath)
  ) {
    faults.add(
      `${path}.path`,
      `must be dot-separated JSON keys like "user.id" (letters, digits, _ and -, not starting with a digit; at most ${FILTER_LIMITS.maxPathLength} characters)`,
    );
    ok = false;
  }
  const op = checkOp(node, path, FIELD_OPS, faults);
  const valuePath = `${path}.value`;
  const value = node.value;
  if (op === 'exists') {
    if (has(node, 'value')) faults.add(valuePath, 'is not allowed with op "exists"');
    return ok && !has(node, 'value') ? { kind: 'field', path: fieldPath as string, op } : undefined;
  }
  if (!has(node, 'value')) {
    faults.add(valuePath, 'is required');
    return undefined;
  }
  if (op === undefined) return undefined;
  switch (op) {
    case 'eq':
    case 'neq':
    case 'contains':
      return checkScalar(value, valuePath, faults) && ok
        ? { kind: 'field', path: fieldPath as string, op, value }
        : undefined;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (typeof value !== 'string' && typeof value !== 'number') {
        faults.add(valuePath, 'must be a string or a number');
        return undefined;
      }
      return checkScalar(value, valuePath, faults) && ok
        ? { kind: 'field', path: fieldPath as string, op, value }
        : undefined;
    case 'in': {
      if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_LIMITS.maxInValues) {
        faults.add(
          valuePath,
          `must be an array of 1 to ${FILTER_LIMITS.maxInValues} strings, numbers, booleans or nulls`,
        );
        return undefined;
      }
      const good = value.map((item, i) => checkScalar(item, `${valuePath}[${i}]`, faults)).every(Boolean);
      return good && ok ? { kind: 'field', path: fieldPath as string, op, value: value as FilterScalar[] } : undefined;
    }
  }
}

function parseStream(node: Record<string, unknown>, path: string, faults: Faults): FilterNode | undefined {
  const op = checkOp(node, path, STREAM_OPS, faults);
  if (!has(node, 'value')) {
    faults.add(`${path}.value`, 'is required');
    return undefined;
  }
  return checkString(node.value, `${path}.value`, faults, FILTER_LIMITS.maxStreamValueLength) && op !== undefined
    ? { kind: 'stream', op, value: node.value }
    : undefined;
}

function parseNode(input: unknown, path: string, depth: number, faults: Faults): FilterNode | undefined {
  if (++faults.nodes > FILTER_LIMITS.maxNodes) {
    faults.tooMany = true;
    faults.add(path, `the filter has more than ${FILTER_LIMITS.maxNodes} nodes`);
    return undefined;
  }
  if (depth > FILTER_LIMITS.maxDepth) {
    // Not descending further bounds the recursion at 17 frames whatever the input's depth.
    faults.add(path, `the filter is nested deeper than ${FILTER_LIMITS.maxDepth} levels`);
    return undefined;
  }
  if (!isRecord(input)) {
    faults.add(path, 'must be an object');
    return undefined;
  }
  const kind = input.kind;
  if (!has(input, 'kind')) {
    faults.add(`${path}.kind`, 'is required');
    return undefined;
  }
  if (typeof kind !== 'string' || !(NODE_KINDS as readonly string[]).includes(kind)) {
    faults.add(`${path}.kind`, oneOf(NODE_KINDS));
    return undefined;
  }
  const allowed = ALLOWED[kind as (typeof NODE_KINDS)[number]];
  let extra = false;
  for (const name of Object.keys(input)) {
    if (!allowed.includes(name)) {
      faults.add(key(path, name), `is not allowed in a "${kind}" node`);
      extra = true;
    }
  }
  let node: FilterNode | undefined;
  switch (kind) {
    case 'all':
      node = { kind: 'all' };
      break;
    case 'and':
    case 'or': {
      const nodes = parseChildren(input.nodes, `${path}.nodes`, depth, faults);
      node = nodes && { kind, nodes };
      break;
    }
    case 'not': {
      if (!has(input, 'node')) faults.add(`${path}.node`, 'is required');
      const child = has(input, 'node') ? parseNode(input.node, `${path}.node`, depth + 1, faults) : undefined;
      node = child && { kind: 'not', node: child };
      break;
    }
    case 'level': {
      const levels = parseLevels(input.levels, `${path}.levels`, faults);
      node = levels && { kind: 'level', levels };
      break;
    }
    case 'text':
      node = parseText(input, path, faults);
      break;
    case 'field':
      node = parseField(input, path, faults);
      break;
    case 'stream':
      node = parseStream(input, path, faults);
      break;
  }
  return extra ? undefined : node;
}

/**
 * Validates a filter tree completely (the HTTP schema may check no more than
 * "an object") and returns a clean copy holding only known properties.
 * Throws `logs:filter:invalid` (400) naming every fault by its JSON path,
 * e.g. `filter.nodes[1].node.value: must be a string`.
 */
export function parseFilter(input: unknown, path = 'filter'): FilterNode {
  const faults = new Faults();
  const node = parseNode(input, path, 1, faults);
  if (node === undefined || faults.items.length > 0) {
    const first = faults.items[0] ?? `${path}: is invalid`;
    throw appError('logs:filter:invalid', {
      message:
        faults.total > 1
          ? `The filter is invalid: ${first} (${faults.total} problems).`
          : `The filter is invalid: ${first}.`,
      details: [listDetail('Invalid fields', faults.items.length > 0 ? faults.items : [first])],
    });
  }
  return node;
}
