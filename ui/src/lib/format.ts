/** Counts as the page writes them: always en-US digits and separators (1,234), whatever the browser's locale. */
const NUMBER = new Intl.NumberFormat('en-US');

export function formatCount(n: number): string {
  return NUMBER.format(n);
}

/** `1 live row`, `2 live rows`, `0 live rows`: the last word takes an `s` unless the count is exactly one. */
export function plural(n: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${formatCount(n)} ${n === 1 ? noun : pluralNoun}`;
}

/** A count in at most ~4 characters for an axis: 950, 1.2k, 15k, 3.4M. */
export function shortCount(n: number): string {
  if (n < 1_000) return String(n);
  const [value, unit] = n < 1_000_000 ? [n / 1_000, 'k'] : [n / 1_000_000, 'M'];
  return `${value < 10 && !Number.isInteger(value) ? value.toFixed(1).replace(/\.0$/, '') : Math.round(value)}${unit}`;
}
