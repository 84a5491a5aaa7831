// How the log explorer shows untrusted log text (ui/src/text.ts): controls, ANSI escapes, and the invisible characters
// that reorder or hide text (bidi controls, zero-width characters, separators, BOM) become visible symbols; every
// other character is shown as itself, and a surrogate pair is never split.
import { describe, expect, it } from 'vitest';
import { displayText, prettyMessage, visibleText } from '../../ui/src/text.js';

const hex = (code: number) => code.toString(16).toUpperCase().padStart(4, '0');
/** No lone surrogate. */
const wellFormed = (text: string) =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Every code point shown as `⟨U+XXXX⟩` besides the controls (issue 20). */
const INVISIBLE = [
  0x061c,
  ...range(0x200b, 0x200f),
  ...range(0x2028, 0x2029),
  ...range(0x202a, 0x202e),
  ...range(0x2060, 0x2064),
  ...range(0x2066, 0x2069),
  0xfeff,
];

/** Their neighbours, and other characters that look odd but show as themselves: never escaped. */
const SHOWN_AS_THEMSELVES = [
  0x0020, 0x00a0, 0x00ad, 0x061b, 0x061d, 0x200a, 0x2010, 0x2027, 0x202f, 0x205f, 0x2065, 0x206a, 0x2070, 0x2400,
  0x241b, 0x27e8, 0x27e9, 0xfefe, 0xff00, 0xfffd, 0x00e9, 0x05d0, 0x0627,
];

describe('visibleText', () => {
  it('shows every listed bidi, zero-width and separator character as ⟨U+XXXX⟩, in every view', () => {
    expect(INVISIBLE).toHaveLength(23);
    for (const code of INVISIBLE) {
      const ch = String.fromCharCode(code);
      const shown = `a⟨U+${hex(code)}⟩b`;
      expect(visibleText(`a${ch}b`), hex(code)).toBe(shown);
      expect(visibleText(`a${ch}b`, true), hex(code)).toBe(shown);
      expect(displayText(`a${ch}b`, 100), hex(code)).toBe(shown);
      expect(prettyMessage(`a${ch}b`), hex(code)).toBe(shown);
      // In a JSON message (JSON.stringify leaves these characters as they are): key and value.
      const json = prettyMessage(JSON.stringify({ [`k${ch}`]: `v${ch}` }));
      expect(json, hex(code)).toBe(`{\n  "k⟨U+${hex(code)}⟩": "v⟨U+${hex(code)}⟩"\n}`);
    }
  });

  it('leaves the neighbours of the escaped ranges, and any other printable character, as they are', () => {
    for (const code of SHOWN_AS_THEMSELVES) {
      const text = `a${String.fromCharCode(code)}b`;
      expect(visibleText(text), hex(code)).toBe(text);
      expect(displayText(text, 100), hex(code)).toBe(text);
      expect(prettyMessage(text), hex(code)).toBe(text);
    }
  });

  it('leaves no listed character and no control in what it answers, whatever the input', () => {
    let all = '';
    for (let code = 0; code <= 0xffff; code++) if (code < 0xd800 || code > 0xdfff) all += String.fromCharCode(code);
    const forbidden = new Set([...range(0, 0x1f), ...range(0x7f, 0x9f), ...INVISIBLE]);
    for (const shown of [visibleText(all), displayText(all, all.length)]) {
      expect([...shown].filter((ch) => forbidden.has(ch.codePointAt(0)!)).map((ch) => hex(ch.codePointAt(0)!))).toEqual(
        [],
      );
    }
    // Line breaks and tabs are kept in the expanded views, and nothing else.
    const kept = [...visibleText(all, true)].filter((ch) => forbidden.has(ch.codePointAt(0)!));
    expect(kept).toEqual(['\t', '\n']);
  });

  it('keeps the existing symbols: C0 controls as control pictures, DEL as ␡, C1 controls by code point', () => {
    expect(visibleText('\u001b[31mred\u001b[0m')).toBe('␛[31mred␛[0m');
    expect(visibleText('a\u0000b\u007fc')).toBe('a␀b␡c');
    expect(visibleText('a\u0085b\u009bc')).toBe('a⟨U+0085⟩b⟨U+009B⟩c');
    expect(visibleText('a\tb\nc')).toBe('a␉b␊c');
    expect(visibleText('a\tb\nc', true)).toBe('a\tb\nc');
  });

  it('shows a right-to-left override as the code point, not as reordered text', () => {
    // "invoice_[RLO]fdp.exe" would read as "invoice_exe.pdf".
    const line = 'invoice_\u202Efdp.exe';
    expect(displayText(line, 500)).toBe('invoice_⟨U+202E⟩fdp.exe');
    expect(displayText(line, 500)).not.toContain('\u202E');
  });

  it('keeps surrogate pairs intact, next to escaped characters and where a long line is cut', () => {
    const emoji = '\u{1F600}';
    const astral = `${emoji}\u202E${emoji}\u200B\u{10FFFF}\uFEFF${emoji}`;
    expect(visibleText(astral)).toBe(`${emoji}⟨U+202E⟩${emoji}⟨U+200B⟩\u{10FFFF}⟨U+FEFF⟩${emoji}`);
    expect(prettyMessage(JSON.stringify({ m: astral }))).toBe(
      `{\n  "m": "${emoji}⟨U+202E⟩${emoji}⟨U+200B⟩\u{10FFFF}⟨U+FEFF⟩${emoji}"\n}`,
    );
    // Cut in the middle of a pair: the whole pair goes with the rest.
    const shown = displayText(`ab${emoji}cd`, 3);
    expect(shown).toBe('ab… (4 more characters)');
    expect(displayText(`ab${emoji}cd`, 4)).toBe(`ab${emoji}… (2 more characters)`);
    for (const text of [shown, visibleText(astral), displayText(astral, 5)]) {
      expect(wellFormed(text), text).toBe(true);
    }
  });

  it('never splits a pair however a line of astral characters is cut', () => {
    const line = '\u{1F600}'.repeat(50);
    for (let max = 1; max <= 101; max++) expect(wellFormed(displayText(line, max)), String(max)).toBe(true);
  });
});
