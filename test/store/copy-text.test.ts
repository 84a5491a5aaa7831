import { describe, expect, it } from 'vitest';
import { copyField, copyRow } from '../../src/store/copy-text.js';

describe("COPY's text format", () => {
  it('escapes backslash, tab, newline and carriage return, writes null as \\N, and leaves the rest as it is', () => {
    expect(copyField('plain text, é 🚀')).toBe('plain text, é 🚀');
    expect(copyField('a\tb\nc\rd\\e')).toBe('a\\tb\\nc\\rd\\\\e');
    // The text "\N" is not NULL: its backslash is escaped.
    expect(copyField('\\N')).toBe('\\\\N');
    expect(copyField(null)).toBe('\\N');
    expect(copyField('')).toBe('');
    expect(copyField(1_700_000_000_123)).toBe('1700000000123');
  });

  it('writes a row as its fields separated by tabs, ending with a newline', () => {
    expect(copyRow(['a\tb', 2, null, ''])).toBe('a\\tb\t2\t\\N\t\n');
  });
});
