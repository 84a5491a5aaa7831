/** A field of a space-delimited event: `value` without its quotes or brackets, and its extent. */
export interface LogField {
  value: string;
  start: number;
  end: number;
}

function isDelimiter(char: string): boolean {
  return char === ' ' || char === '\t';
}

/**
 * Splits an event the way AWS reads space-delimited events: runs of spaces
 * separate fields, and a field that opens with `"` or `[` runs to the next
 * `"` or `]` (to the end of the line when that never comes).
 */
export function splitLogFields(message: string): LogField[] {
  const fields: LogField[] = [];
  const length = message.length;
  let i = 0;
  for (;;) {
    while (i < length && isDelimiter(message.charAt(i))) i++;
    if (i >= length) break;
    const start = i;
    const open = message.charAt(i);
    const close = open === '"' ? '"' : open === '[' ? ']' : undefined;
    if (close !== undefined) {
      const found = message.indexOf(close, i + 1);
      const end = found < 0 ? length : found;
      fields.push({ value: message.slice(i + 1, end), start, end: found < 0 ? length : found + 1 });
      i = found < 0 ? length : found + 1;
      continue;
    }
    while (i < length && !isDelimiter(message.charAt(i))) i++;
    fields.push({ value: message.slice(start, i), start, end: i });
  }
  return fields;
}
