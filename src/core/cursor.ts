import { Type } from '@sinclair/typebox';
import { appError } from './errors.js';
import { type CursorSeal, openCursor, sealCursor } from './sealed-cursor.js';

/** Where the next page of an instance's domains starts: after this (domainName, id). */
export interface DomainCursor {
  moduleInstanceId: string;
  domainName: string;
  id: string;
}

const VERSION = 1;

/** An id as the API takes one (1–128 characters); a domain name as the seed stores one (1–253). */
const Id = Type.String({ minLength: 1, maxLength: 128 });
const FIELDS = Type.Tuple([Type.Literal(VERSION), Id, Type.String({ minLength: 1, maxLength: 253 }), Id]);
const SEAL: CursorSeal<typeof FIELDS> = { fields: FIELDS };

/** `base64url(JSON).base64url(HMAC)`: opaque to clients, and any change to it is detected. */
export function encodeCursor(cursor: DomainCursor, key: string): string {
  return sealCursor(SEAL, key, [VERSION, cursor.moduleInstanceId, cursor.domainName, cursor.id]);
}

function invalid(): never {
  throw appError('domains:cursor:invalid', {
    description: 'Use the nextCursor of a previous page of the same module instance, or start again without a cursor.',
  });
}

/**
 * Reads a cursor back, or throws 400 `domains:cursor:invalid` when it was altered, made up, or holds anything but
 * `[1, instance, domainName, id]` as storable text. Pure: a caller checks it before any statement runs, and checks
 * `cursorFits` once it knows the caller may read the instance.
 */
export function decodeCursor(text: string, key: string): DomainCursor {
  const parsed = openCursor(SEAL, key, text);
  if (parsed === undefined) invalid();
  const [, instance, domainName, id] = parsed;
  return { moduleInstanceId: instance, domainName, id };
}

/**
 * Throws 400 `domains:cursor:invalid` when the cursor was issued for another module instance (so a cursor never
 * opens another tenant's list). Checked after the instance's owner: another organization's instance and a missing
 * one answer alike (404) whatever cursor comes with them.
 */
export function checkCursorInstance(cursor: DomainCursor, moduleInstanceId: string): void {
  if (cursor.moduleInstanceId !== moduleInstanceId) invalid();
}
