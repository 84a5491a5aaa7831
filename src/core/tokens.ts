import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Tokens look like `berth_<keyId>_<secret>`; only their SHA-256 is stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
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
