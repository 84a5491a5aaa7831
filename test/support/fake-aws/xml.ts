// A small XML reader/writer, enough for the request bodies the AWS SDK sends
// (elements, text, entities, CDATA; attributes are read but namespaces ignored).

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** Concatenated text content directly inside this element (entities decoded). */
  text: string;
}

export class XmlParseError extends Error {}

export function parseXml(source: string): XmlElement {
  let i = 0;
  const len = source.length;

  const skipMisc = (): void => {
    for (;;) {
      while (i < len && /\s/.test(source[i] ?? '')) i++;
      if (source.startsWith('<?', i)) {
        const end = source.indexOf('?>', i);
        if (end < 0) throw new XmlParseError('unterminated processing instruction');
        i = end + 2;
      } else if (source.startsWith('<!--', i)) {
        const end = source.indexOf('-->', i);
        if (end < 0) throw new XmlParseError('unterminated comment');
        i = end + 3;
      } else if (source.startsWith('<!DOCTYPE', i)) {
        throw new XmlParseError('DOCTYPE not allowed');
      } else {
        return;
      }
    }
  };

  const readName = (): string => {
    const m = /^[A-Za-z_:][\w.:-]*/.exec(source.slice(i, i + 200));
    if (!m) throw new XmlParseError(`expected a name at ${i}`);
    i += m[0].length;
    return m[0];
  };

  const parseElement = (): XmlElement => {
    if (source[i] !== '<') throw new XmlParseError(`expected '<' at ${i}`);
    i++;
    const name = readName();
    const attributes: Record<string, string> = {};
    for (;;) {
      while (i < len && /\s/.test(source[i] ?? '')) i++;
      if (source.startsWith('/>', i)) {
        i += 2;
        return { name, attributes, children: [], text: '' };
      }
      if (source[i] === '>') {
        i++;
        break;
      }
      const attr = readName();
      while (i < len && /\s/.test(source[i] ?? '')) i++;
      if (source[i] !== '=') throw new XmlParseError(`expected '=' at ${i}`);
      i++;
      while (i < len && /\s/.test(source[i] ?? '')) i++;
      const quote = source[i];
      if (quote !== '"' && quote !== "'") throw new XmlParseError(`expected a quote at ${i}`);
      const end = source.indexOf(quote, i + 1);
      if (end < 0) throw new XmlParseError('unterminated attribute');
      attributes[attr] = decodeEntities(source.slice(i + 1, end));
      i = end + 1;
    }
    const children: XmlElement[] = [];
    let text = '';
    for (;;) {
      if (i >= len) throw new XmlParseError(`unterminated element <${name}>`);
      if (source.startsWith('</', i)) {
        i += 2;
        const closing = readName();
        if (closing !== name) throw new XmlParseError(`</${closing}> closes <${name}>`);
        while (i < len && /\s/.test(source[i] ?? '')) i++;
        if (source[i] !== '>') throw new XmlParseError(`expected '>' at ${i}`);
        i++;
        return { name, attributes, children, text };
      }
      if (source.startsWith('<![CDATA[', i)) {
        const end = source.indexOf(']]>', i);
        if (end < 0) throw new XmlParseError('unterminated CDATA');
        text += source.slice(i + 9, end);
        i = end + 3;
      } else if (source.startsWith('<!--', i)) {
        const end = source.indexOf('-->', i);
        if (end < 0) throw new XmlParseError('unterminated comment');
        i = end + 3;
      } else if (source[i] === '<') {
        children.push(parseElement());
      } else {
        const next = source.indexOf('<', i);
        const end = next < 0 ? len : next;
        text += decodeEntities(source.slice(i, end));
        i = end;
      }
    }
  };

  skipMisc();
  const root = parseElement();
  skipMisc();
  if (i < len) throw new XmlParseError('content after the root element');
  return root;
}

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_m, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(Number.parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(Number.parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e] ?? '';
  });
}

export function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  return el?.children.find((c) => c.name === name);
}

export function childrenNamed(el: XmlElement | undefined, name: string): XmlElement[] {
  return el ? el.children.filter((c) => c.name === name) : [];
}

export function childText(el: XmlElement | undefined, name: string): string | undefined {
  return child(el, name)?.text;
}

// ---------------------------------------------------------------- writing

export function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** A value to serialize: an element's children (object / array of [name, value]) or text. */
export type XmlValue = string | number | boolean | undefined | XmlValue[] | XmlFields;
export interface XmlFields {
  [name: string]: XmlValue;
}

/**
 * `{A: 'x', B: {C: 1}, L: [{M: {...}}, {M: {...}}]}` → `<A>x</A><B><C>1</C></B><L><M>…</M><M>…</M></L>`.
 * An array's items are objects whose keys become the element names (so lists keep their member names).
 * `undefined` members are omitted.
 */
export function toXml(fields: XmlFields): string {
  let out = '';
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    out += `<${name}>${valueToXml(value)}</${name}>`;
  }
  return out;
}

function valueToXml(value: XmlValue): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return escapeXml(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map((v) => valueToXml(v)).join('');
  return toXml(value);
}

export function xmlDocument(rootName: string, xmlns: string, fields: XmlFields): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${rootName} xmlns="${escapeXml(xmlns)}">${toXml(fields)}</${rootName}>`;
}
