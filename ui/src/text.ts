/**
 * Log messages are untrusted text: they are only ever put into text nodes (Preact escapes them), and characters
 * that would not show as themselves are shown as visible symbols rather than passed to the page: control
 * characters (ANSI escapes among them), and the invisible ones that reorder or hide text (bidi controls such as
 * U+202E, zero-width characters, line and paragraph separators, the byte order mark), so a line cannot pass for
 * another.
 */

/**
 * C0 controls as the Unicode "control pictures" (␀…␟), DEL as ␡, everything else as its code point in angle
 * brackets (C1 controls, bidi and zero-width characters): `⟨U+202E⟩`.
 */
function visible(ch: string): string {
  const code = ch.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `\u27e8U+${code.toString(16).toUpperCase().padStart(4, '0')}\u27e9`;
}

/**
 * Shown by code point besides the controls: U+061C (Arabic letter mark), U+200B–U+200F (zero-width space,
 * non-joiner, joiner, left-to-right and right-to-left marks), U+2028–U+2029 (line and paragraph separators),
 * U+202A–U+202E (bidi embeddings and overrides), U+2060–U+2064 (word joiner, invisible operators), U+2066–U+2069
 * (bidi isolates), U+FEFF (zero-width no-break space, byte order mark). All are single UTF-16 code units outside
 * the surrogates, so a surrogate pair is never split.
 */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
/** The same, but line breaks and tabs kept (a message shown expanded). */
const CONTROLS_BUT_LAYOUT =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/** Every control and invisible character of `text` visible; line breaks and tabs kept when `keepLayout`. */
export function visibleText(text: string, keepLayout = false): string {
  return text.replace(keepLayout ? CONTROLS_BUT_LAYOUT : CONTROLS, visible);
}

/** At most `max` UTF-16 code units, never half of a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}… (${(text.length - end).toLocaleString()} more characters)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** One line: every control and invisible character visible, at most `max` characters. */
export function displayText(text: string, max: number): string {
  return visibleText(cut(text, max));
}

/** Characters of a message shown expanded; a 1 MB line stays responsive. */
const DETAIL_CHARS = 100_000;

/** A JSON message pretty-printed, any other as it is; line breaks and tabs kept, other controls and invisibles visible. */
export function prettyMessage(message: string): string {
  const trimmed = message.trimStart();
  if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && message.length <= 1_000_000) {
    try {
      return visibleText(cut(JSON.stringify(JSON.parse(message), null, 2), DETAIL_CHARS), true);
    } catch {
      // Not JSON after all: shown as text.
    }
  }
  return visibleText(cut(message, DETAIL_CHARS), true);
}
