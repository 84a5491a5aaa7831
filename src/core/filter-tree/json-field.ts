import type { FilterScalar } from './schema.js';

const MISSING: unique symbol = Symbol('missing');
export type FieldValue = unknown | typeof MISSING;

/**
 * The value at a dotted path of object keys, or MISSING. Only own keys of
 * plain objects are followed; an array on the way makes the field missing
 * (paths have no indexes), and so does a row whose message is not a JSON object.
 */
export function lookupField(json: unknown, path: string): FieldValue {
  let current: unknown = json;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return MISSING;
    if (!Object.hasOwn(current, key)) return MISSING;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export function isMissing(value: FieldValue): value is typeof MISSING {
  return value === MISSING;
}

/**
 * Equality of a JSON value and a filter scalar: same JSON type and same value,
 * numbers as IEEE doubles (what JSON.parse makes of the message), strings code
 * unit for code unit. Objects and arrays equal no scalar; `"5"` is not `5`.
 */
export function scalarEquals(value: unknown, scalar: FilterScalar): boolean {
  if (scalar === null) return value === null;
  return typeof value === typeof scalar && value === scalar;
}

/** Orders strings by code point, as PostgreSQL's "C" collation does (UTF-16 code units differ above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (U+D800–DFFF) starts a code point above U+FFFF, which outranks U+E000–FFFF.
    const sx = x >= 0xd800 && x <= 0xdfff ? x + 0x2000 : x >= 0xe000 ? x - 0x800 : x;
    const sy = y >= 0xd800 && y <= 0xdfff ? y + 0x2000 : y >= 0xe000 ? y - 0x800 : y;
    return sx - sy;
  }
  return a.length - b.length;
}

/** `value op scalar` for the ordering operators: numbers with numbers, strings with strings, else false. */
export function scalarCompare(value: unknown, op: 'gt' | 'gte' | 'lt' | 'lte', scalar: string | number): boolean {
  let c: number;
  if (typeof scalar === 'number' && typeof value === 'number') c = value < scalar ? -1 : value > scalar ? 1 : 0;
  else if (typeof scalar === 'string' && typeof value === 'string') c = compareCodePoints(value, scalar);
  else return false;
  switch (op) {
    case 'gt':
      return c > 0;
    case 'gte':
      return c >= 0;
    case 'lt':
      return c < 0;
    case 'lte':
      return c <= 0;
  }
}
