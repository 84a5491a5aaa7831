import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Tokens look like `berth_<keyId>_<secret>`; only their SHA-256 is stored. The one-shot `hash` builds no Hash
 * object: every authenticated request pays for this once.
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function generateToken(keyId: string): string {
  return `berth_${keyId}_${randomBytes(24).toString('base64url')}`;
}

export function generateKeyId(): string {
  return `key${randomBytes(8).toString('hex')}`;
}
