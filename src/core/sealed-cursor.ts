import { createHmac, timingSafeEqual } from 'node:crypto';

/** How one kind of cursor is sealed: its default key (CURSOR_SECRET unset) and an optional prefix to the MAC. */
export interface CursorSeal {
  defaultKey: string;
  macPrefix?: string;
}

const MAX_CURSOR_LENGTH = 2048;

function sign(seal: CursorSeal, key: string, payload: string): Buffer {
  return createHmac('sha256', key || seal.defaultKey)
    .update(`${seal.macPrefix ?? ''}${payload}`)
    .digest();
}

/** `base64url(JSON).base64url(HMAC)`: opaque to clients, and any change to it is detected. */
export function sealCursor(seal: CursorSeal, key: string, fields: unknown[]): string {
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${sign(seal, key, payload).toString('base64url')}`;
}

/** The fields of a cursor this seal made, or undefined when it was altered, made up or is too long. */
export function openCursor(seal: CursorSeal, key: string, text: string): unknown[] | undefined {
  if (text.length > MAX_CURSOR_LENGTH) return undefined;
  const [payload, mac, extra] = text.split('.');
  if (payload === undefined || mac === undefined || extra !== undefined) return undefined;
  const given = Buffer.from(mac, 'base64url');
  const expected = sign(seal, key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
