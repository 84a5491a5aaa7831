/**
 * PostgreSQL's `COPY … FROM` text format: one line a row, columns separated by a tab, `\N` for NULL, and in a
 * value a backslash, tab, newline or carriage return escaped with a backslash (nothing else needs escaping).
 */

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;

/** One value as COPY's text format writes it; null is `\N`. */
export function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  return SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPES[c]!) : value;
}

/** One row: its values in the table's column order, ending with a newline. */
export function copyRow(values: readonly (string | number | null)[]): string {
  let line = copyField(values[0] ?? null);
  for (let i = 1; i < values.length; i++) line += `\t${copyField(values[i] ?? null)}`;
  return `${line}\n`;
}
