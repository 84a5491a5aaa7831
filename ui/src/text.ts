/**
 * Log messages are untrusted text: they are only ever put into text nodes (Preact escapes them), and control
 * characters (ANSI escapes among them) are shown as visible symbols rather than passed to the page.
 */

/** C0 controls as the Unicode "control pictures" (␀…␟), DEL as ␡, C1 controls as their code. */
function visible(ch: string): string {
  const code = ch.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
const CONTROLS_BUT_LAYOUT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${(text.length - max).toLocaleString()} more characters)`;
}

/** One line: every control character visible, at most `max` characters. */
export function displayText(text: string, max: number): string {
  return cut(text, max).replace(CONTROLS, visible);
}

/** Characters of a message shown expanded; a 1 MB line stays responsive. */
const DETAIL_CHARS = 100_000;

/** A JSON message pretty-printed, any other as it is; line breaks and tabs kept, other controls visible. */
export function prettyMessage(message: string): string {
  const trimmed = message.trimStart();
  if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && message.length <= 1_000_000) {
    try {
      return cut(JSON.stringify(JSON.parse(message), null, 2), DETAIL_CHARS).replace(CONTROLS_BUT_LAYOUT, visible);
    } catch {
      // Not JSON after all: shown as text.
    }
  }
  return cut(message, DETAIL_CHARS).replace(CONTROLS_BUT_LAYOUT, visible);
}
