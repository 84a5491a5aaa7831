import { createHmac, timingSafeEqual } from 'node:crypto';
import { appError } from './errors.js';

/** Where the next page of an organization's keys starts: after this (createdAt, id), newest first. */
export interface ApiKeyCursor {
  organizationId: string;
  /** The exact stored time, as the database wrote it (microseconds). */
  createdAt: string;
  id: string;
}

/** Its own default key and version tag, so a domain-list cursor can never pass for a key-list one. */
const DEFAULT_KEY = 'berth-api-key-cursor-v1';
const VERSION = 'k1';
const MAX_CURSOR_LENGTH = 2048;

function sign(key: string, payload: string): Buffer {
  return createHmac('sha256', key || DEFAULT_KEY)
    .update(`${VERSION}.${payload}`)
    .digest();
}

/**
 * `base64url(JSON).base64url(HMAC)`: sealed, so only positions Berth issued reach the database (a made-up
 * time would be a cast error there), and bound to the organization, so another organization's cursor is
 * refused exactly like a tampered one.
 */
export function encodeApiKeyCursor(cursor: ApiKeyCursor, key: string): string {
  const payload = Buffer.from(JSON.stringify([VERSION, cursor.organizationId, cursor.createdAt, cursor.id])).toString(
    'base64url',
  );
  return `${payload}.${sign(key, payload).toString('base64url')}`;
}

function invalid(): never {
  throw appError('api-keys:cursor:invalid', {
    description: "Use the nextCursor of a previous page of the same organization's keys, or start again without one.",
  });
}

export function decodeApiKeyCursor(text: string, key: string, organizationId: string): ApiKeyCursor {
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
  const [, organization, createdAt, id] = parsed as unknown[];
  if (typeof organization !== 'string' || typeof createdAt !== 'string' || typeof id !== 'string') invalid();
  if (organization !== organizationId) invalid();
  return { organizationId: organization, createdAt, id };
}
