import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashes: scrypt from `node:crypto` (memory-hard; it runs on libuv's thread pool, never on the event
 * loop). N = 2^16, r = 8, p = 1 takes 64 MiB and about 0.2–0.3 s per hash on one core of this machine: half of OWASP's
 * current recommendation (N = 2^17), because anyone may ask for a hash (an unknown email is hashed too) and the
 * hashes of a process share one slot by default (docs/decisions.md). The parameters travel in the stored string
 * (`scrypt$N$r$p$salt$hash`, base64url), so they can be raised later without losing the hashes made before.
 */
export const SCRYPT_PARAMS = { N: 2 ** 16, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
/** scrypt needs 128 · N · r bytes; Node's default limit is 32 MiB. */
const maxmemOf = (N: number, r: number) => 128 * N * r + 1024 * 1024;

function derive(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { N, r, p, maxmem: maxmemOf(N, r) }, (error, key) =>
      error === null ? resolve(key) : reject(error),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const { N, r, p } = SCRYPT_PARAMS;
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, N, r, p);
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

const STORED = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{16,128})$/;

/**
 * Whether `password` matches `stored`. A missing or unreadable hash still costs one full hash (against a dummy),
 * so an unknown account takes as long as a wrong password.
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const match = stored === null || stored === undefined ? null : STORED.exec(stored);
  if (match === null) {
    await derive(password, DUMMY_SALT, SCRYPT_PARAMS.N, SCRYPT_PARAMS.r, SCRYPT_PARAMS.p);
    return false;
  }
  const [, n, r, p, salt, key] = match;
  const N = Number(n);
  // Only parameters this module could have written: a tampered row must not make one check cost gigabytes.
  if (N > 2 ** 20 || (N & (N - 1)) !== 0 || Number(r) > 32 || Number(p) > 16) return false;
  const expected = Buffer.from(key!, 'base64url');
  const actual = await derive(password, Buffer.from(salt!, 'base64url'), N, Number(r), Number(p));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

const DUMMY_SALT = randomBytes(SALT_LENGTH);
