import { appError } from './errors.js';
import { type CursorSeal, openCursor, sealCursor } from './sealed-cursor.js';

/** Where the next page of an instance's domains starts: after this (domainName, id). */
export interface DomainCursor {
  moduleInstanceId: string;
  domainName: string;
  id: string;
}

/** Used when CURSOR_SECRET is unset: cursors stay tamper-evident and bound to their instance. */
const DEFAULT_KEY = 'berth-domain-cursor-v1';
const VERSION = 1;

const SEAL: CursorSeal = { defaultKey: DEFAULT_KEY };

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
 * Reads a cursor back, or throws 400 `domains:cursor:invalid` when it was altered, made up, or
 * issued for another module instance (so a cursor never opens another tenant's list).
 */
export function decodeCursor(text: string, key: string, moduleInstanceId: string): DomainCursor {
  const parsed = openCursor(SEAL, key, text);
  if (parsed === undefined || parsed.length !== 4 || parsed[0] !== VERSION) invalid();
  const [, instance, domainName, id] = parsed as unknown[];
  if (typeof instance !== 'string' || typeof domainName !== 'string' || typeof id !== 'string') invalid();
  if (instance !== moduleInstanceId) invalid();
  return { moduleInstanceId: instance, domainName, id };
}
