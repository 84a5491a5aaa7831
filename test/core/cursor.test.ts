import { describe, expect, it } from 'vitest';
import { decodeApiKeyCursor, encodeApiKeyCursor } from '../../src/core/api-key-cursor.js';
import { checkCursorInstance, decodeCursor, encodeCursor } from '../../src/core/cursor.js';
import { AppError } from '../../src/core/errors.js';

const cursor = { moduleInstanceId: 'mi-1', domainName: 'b.example.com', id: 'd-2' };
const keyCursor = { organizationId: 'org-1', createdAt: '2024-01-15T12:00:00.123456Z', id: 'key-1' };

function rejects(run: () => unknown, code = 'domains:cursor:invalid'): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe('domain list cursors', () => {
  it('read back what they were made from, and are URL-safe', () => {
    const text = encodeCursor(cursor, 'k');
    expect(text).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(decodeCursor(text, 'k')).toEqual(cursor);
  });

  it('are never sealed or opened without a key (there is no built-in one)', () => {
    expect(() => encodeCursor(cursor, '')).toThrow(/cursor secret missing/);
    expect(() => decodeCursor(encodeCursor(cursor, 'k'), '')).toThrow(/cursor secret missing/);
  });

  it('are refused when made with another key, for another instance, or altered in any way', () => {
    const text = encodeCursor(cursor, 'k');
    rejects(() => decodeCursor(text, 'other-key'));
    rejects(() => checkCursorInstance(decodeCursor(text, 'k'), 'mi-2'));
    const [payload, mac] = text.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify([1, 'mi-1', 'a', 'b'])).toString('base64url');
    for (const bad of [
      `${forged}.${mac}`,
      `${payload}.${mac.slice(1)}`,
      payload,
      `${text}.x`,
      '',
      '.',
      'x'.repeat(5000),
    ]) {
      rejects(() => decodeCursor(bad, 'k'));
    }
  });

  it('are refused when sealed with the right key around the wrong contents', () => {
    for (const bad of [
      { ...cursor, domainName: 'a\u0000b' },
      { ...cursor, id: '\ud800' },
      { ...cursor, domainName: '' },
      { ...cursor, id: 'x'.repeat(129) },
    ]) {
      rejects(() => decodeCursor(encodeCursor(bad, 'k'), 'k'));
    }
  });
});

describe('API key list cursors', () => {
  it('read back what they were made from', () => {
    expect(decodeApiKeyCursor(encodeApiKeyCursor(keyCursor, 'k'), 'k', 'org-1')).toEqual(keyCursor);
  });

  it('are refused with an impossible time, for another organization, or as a domain-list cursor', () => {
    const code = 'api-keys:cursor:invalid';
    for (const createdAt of ['2023-02-29T00:00:00.000000Z', '2024-01-01T24:00:00.000000Z', 'NaN', '']) {
      rejects(() => decodeApiKeyCursor(encodeApiKeyCursor({ ...keyCursor, createdAt }, 'k'), 'k', 'org-1'), code);
    }
    rejects(() => decodeApiKeyCursor(encodeApiKeyCursor(keyCursor, 'k'), 'k', 'org-2'), code);
    const asDomain = encodeCursor({ moduleInstanceId: 'org-1', domainName: keyCursor.createdAt, id: 'key-1' }, 'k');
    rejects(() => decodeApiKeyCursor(asDomain, 'k', 'org-1'), code);
  });
});
