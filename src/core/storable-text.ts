/**
 * What PostgreSQL `text` cannot hold: U+0000, and a lone surrogate (UTF-8 cannot encode one). With the `u` flag a
 * surrogate pair is one code point, so astral characters (emoji) pass. The same rule as `STORABLE_TEXT_PATTERN`
 * (`schemas/common.ts`), for values checked outside Ajv (TypeBox's `Value.Check` compiles patterns without `u`).
 */
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;

export function isStorableText(value: string): boolean {
  return !UNSTORABLE.test(value);
}

/**
 * Whether every string in a parsed JSON value, object keys included, is storable text. Iterative, so a deeply
 * nested value cannot exhaust the stack.
 */
export function holdsOnlyStorableText(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (!isStorableText(v)) return false;
    } else if (Array.isArray(v)) {
      pending.push(...v);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        if (!isStorableText(k)) return false;
        pending.push(item);
      }
    }
  }
  return true;
}
