import { Type } from '@sinclair/typebox';
import { appError } from './errors.js';
import { type CursorSeal, openCursor, sealCursor } from './sealed-cursor.js';

/** Where the next page of an organization's keys starts: after this (createdAt, id), newest first. */
export interface ApiKeyCursor {
  organizationId: string;
  /** The exact stored time, as the database wrote it (microseconds). */
  createdAt: string;
  id: string;
}

/** Its own version tag, also in the MAC, so a domain-list cursor can never pass for a key-list one. */
const VERSION = 'k1';

const Id = Type.String({ minLength: 1, maxLength: 128 });
/** `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')` (store/repositories/api-keys.ts). */
const CREATED_AT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{6}Z$/;
const FIELDS = Type.Tuple([Type.Literal(VERSION), Id, Type.String({ pattern: CREATED_AT.source }), Id]);
const SEAL: CursorSeal<typeof FIELDS> = { macPrefix: `${VERSION}.`, fields: FIELDS };

/**
 * A time the database wrote and can read back: a real calendar time from 1970-01-01 to 9999-12-31 (not
 * 2023-02-30, not 24:00), so the `::timestamptz` cast of the page's statement cannot fail.
 */
function isStoredTime(text: string): boolean {
  const m = CREATED_AT.exec(text);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < 1970 || hour > 23 || minute > 59 || second > 59) return false;
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * `base64url(JSON).base64url(HMAC)`: sealed, so only positions Berth issued reach the database, and bound to the
 * organization, so another organization's cursor is refused exactly like a tampered one.
 */
export function encodeApiKeyCursor(cursor: ApiKeyCursor, key: string): string {
  return sealCursor(SEAL, key, [VERSION, cursor.organizationId, cursor.createdAt, cursor.id]);
}

function invalid(): never {
  throw appError('api-keys:cursor:invalid', {
    description: "Use the nextCursor of a previous page of the same organization's keys, or start again without one.",
  });
}

/**
 * Reads a cursor back, or throws 400 `api-keys:cursor:invalid` when it was altered, made up, holds anything but
 * `['k1', organization, stored time, id]` as storable text, or was issued for another organization. Pure: a
 * caller checks it before any statement runs.
 */
export function decodeApiKeyCursor(text: string, key: string, organizationId: string): ApiKeyCursor {
  const parsed = openCursor(SEAL, key, text);
  if (parsed === undefined) invalid();
  const [, organization, createdAt, id] = parsed;
  if (!isStoredTime(createdAt) || organization !== organizationId) invalid();
  return { organizationId: organization, createdAt, id };
}
