import { appError } from './errors.js';
import { type CursorSeal, openCursor, sealCursor } from './sealed-cursor.js';

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

const SEAL: CursorSeal = { defaultKey: DEFAULT_KEY, macPrefix: `${VERSION}.` };

/**
 * `base64url(JSON).base64url(HMAC)`: sealed, so only positions Berth issued reach the database (a made-up
 * time would be a cast error there), and bound to the organization, so another organization's cursor is
 * refused exactly like a tampered one.
 */
export function encodeApiKeyCursor(cursor: ApiKeyCursor, key: string): string {
  return sealCursor(SEAL, key, [VERSION, cursor.organizationId, cursor.createdAt, cursor.id]);
}

function invalid(): never {
  throw appError('api-keys:cursor:invalid', {
    description: "Use the nextCursor of a previous page of the same organization's keys, or start again without one.",
  });
}

export function decodeApiKeyCursor(text: string, key: string, organizationId: string): ApiKeyCursor {
  const parsed = openCursor(SEAL, key, text);
  if (parsed === undefined || parsed.length !== 4 || parsed[0] !== VERSION) invalid();
  const [, organization, createdAt, id] = parsed as unknown[];
  if (typeof organization !== 'string' || typeof createdAt !== 'string' || typeof id !== 'string') invalid();
  if (organization !== organizationId) invalid();
  return { organizationId: organization, createdAt, id };
}
