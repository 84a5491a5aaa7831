import { describe, expect, it } from 'vitest';
import { hashPassword, SCRYPT_PARAMS, verifyPassword } from '../../src/core/password-hash.js';

describe('password hashes (scrypt)', () => {
  it('verifies the password it hashed and nothing else, with the parameters stored in the hash', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(stored).toMatch(new RegExp(`^scrypt\\$${SCRYPT_PARAMS.N}\\$${SCRYPT_PARAMS.r}\\$${SCRYPT_PARAMS.p}\\$`));
    expect(stored).not.toContain('correct horse');
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same'), hashPassword('same')]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same', a)).toBe(true);
    expect(await verifyPassword('same', b)).toBe(true);
  });

  it('compares Unicode passwords in one normal form', async () => {
    const stored = await hashPassword('caf\u00e9');
    expect(await verifyPassword('cafe\u0301', stored)).toBe(true);
  });

  it('refuses a missing, unreadable or tampered hash after the cost of a hash', async () => {
    const started = performance.now();
    expect(await verifyPassword('x', null)).toBe(false);
    const missingMs = performance.now() - started;
    const stored = await hashPassword('x');
    const timed = performance.now();
    expect(await verifyPassword('y', stored)).toBe(false);
    const wrongMs = performance.now() - timed;
    // The same work either way: within a factor of three on a busy machine.
    expect(missingMs).toBeGreaterThan(wrongMs / 3);
    expect(await verifyPassword('x', 'plain-text-password')).toBe(false);
    // Parameters this module never writes (here N = 2^24: gigabytes, seconds of work) are refused without running
    // (the bound leaves room for a busy host's pauses, far under what running them would take).
    const huge = stored.replace(/^scrypt\$\d+\$/, `scrypt$${2 ** 24}$`);
    const before = performance.now();
    expect(await verifyPassword('x', huge)).toBe(false);
    expect(performance.now() - before).toBeLessThan(250);
  });
});
