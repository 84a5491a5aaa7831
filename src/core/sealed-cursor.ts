import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Static, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { holdsOnlyStorableText } from './storable-text.js';

/**
 * How one kind of cursor is sealed: an optional prefix to the MAC, and the exact shape its fields must have. The
 * key is the cluster's cursor secret (`CURSOR_SECRET`, else the one generated into the database on first start);
 * there is no built-in key.
 */
export interface CursorSeal<S extends TSchema> {
  macPrefix?: string;
  /** The fields, checked whole after the MAC (a cursor sealed with a leaked key still cannot carry anything else). */
  fields: S;
}

const MAX_CURSOR_LENGTH = 2048;
/** base64url, no padding. */
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** An HMAC-SHA256 in base64url: 32 bytes, 43 characters. */
const MAC_LENGTH = 43;

function sign(seal: CursorSeal<TSchema>, key: string, payload: string): Buffer {
  // A bug, never a request's fault: a cursor sealed with no key would be anyone's to make.
  if (key === '') throw new Error('cursor secret missing');
  return createHmac('sha256', key)
    .update(`${seal.macPrefix ?? ''}${payload}`)
    .digest();
}

/** `base64url(JSON).base64url(HMAC)`: opaque to clients, and any change to it is detected. */
export function sealCursor<S extends TSchema>(seal: CursorSeal<S>, key: string, fields: Static<S>): string {
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${sign(seal, key, payload).toString('base64url')}`;
}

/**
 * The fields of a cursor this seal made, or undefined when it was altered, made up, too long, or holds anything
 * but the seal's exact shape with text PostgreSQL can store (no U+0000, no lone surrogate) — so nothing read from
 * a cursor can fail a statement.
 */
export function openCursor<S extends TSchema>(seal: CursorSeal<S>, key: string, text: string): Static<S> | undefined {
  if (text.length > MAX_CURSOR_LENGTH) return undefined;
  const [payload, mac, extra] = text.split('.');
  if (payload === undefined || mac === undefined || extra !== undefined) return undefined;
  if (!BASE64URL.test(payload) || mac.length !== MAC_LENGTH || !BASE64URL.test(mac)) return undefined;
  const given = Buffer.from(mac, 'base64url');
  // Canonical only: the last character's unused bits could otherwise spell the same MAC several ways.
  if (given.toString('base64url') !== mac) return undefined;
  const expected = sign(seal, key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!holdsOnlyStorableText(parsed) || !Value.Check(seal.fields, parsed)) return undefined;
  return parsed as Static<S>;
}
