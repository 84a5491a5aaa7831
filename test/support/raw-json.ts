// JSON text with numbers spelled exactly as given, for rows whose number spelling matters.

/** A JSON number spelled exactly so (jsonb keeps the decimal, JSON.parse rounds it). */
export class RawNumber {
  constructor(readonly text: string) {}
}

/** JSON text of `value`, `RawNumber`s written as their own spelling; objects as `{"k": v, …}`. */
export function writeJson(value: unknown): string {
  if (value instanceof RawNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map(writeJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${writeJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}
