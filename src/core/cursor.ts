import { createHmac, timingSafeEqual } from 'node:crypto';
import { appError } from './errors.js';

/** Where the next page of an instance's domains starts: after this (domainName, id). */
export interface DomainCursor {
  moduleInstanceId: string;
  domainName: string;
  id: string;
}

/** Used when CURSOR_SECRET is unset: cursors stay tamper-evident and bound to their instance. */
const DEFAULT_KEY = 'berth-domain-cursor-v1';
const VERSION = 1;
const MAX_CURSOR_LENGTH = 2048;

function sign(key: string, payload: string): Buffer {
  return createHmac('sha256', key || DEFAULT_KEY)
    .update(payload)
    .digest();
}

/** `base64url(JSON).base64url(HMAC)`: opaque to clients, and any change to it is detected. */
export function encodeCursor(cursor: DomainCursor, key: string): string {
  const payload = Buffer.from(
    JSON.stringify([VERSION, cursor.moduleInstanceId, cursor.domainName, cursor.id]),
  ).toString('base64url');
  return `${payload}.${sign(key, payload).toString('base64url')}`;
}

function invalid(): never {
  throw appError('domains:cursor:invalid', {
    description: 'Use the nextCursor of a previous page of the same module instance, or start again without a cursor.',
  });
}

/**
 * Reads a cursor back, or throws 400 `domains:cursor:invalid` when it was altered, made up, or
 * issued for another module instance (so a cursor never opens another tenant's list).
 */
export function decodeCursor(text: string, key: string, moduleInstanceId: string): DomainCursor {
  if (text.length > MAX_CURSOR_LENGTH) invalid();
  const [payload, mac, extra] = text.split('.');
  if (payload === undefined || mac === undefined || extra !== undefined) invalid();
  const given = Buffer.from(mac, 'base64url');
  const expected = sign(key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    invalid();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== VERSION) invalid();
  const [, instance, domainName, id] = parsed as unknown[];
  if (typeof instance !== 'string' || typeof domainName !== 'string' || typeof id !== 'string') invalid();
  if (instance !== moduleInstanceId) invalid();
  return { moduleInstanceId: instance, domainName, id };
}
