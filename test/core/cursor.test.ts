import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../src/core/cursor.js';
import { AppError } from '../../src/core/errors.js';

const cursor = { moduleInstanceId: 'mi-1', domainName: 'b.example.com', id: 'd-2' };

function rejects(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('domains:cursor:invalid');
    return;
  }
  throw new Error('expected domains:cursor:invalid');
}

describe('domain list cursors', () => {
  it('read back what they were made from, and are URL-safe', () => {
    const text = encodeCursor(cursor, 'k');
    expect(text).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text, 'k', 'mi-1')).toEqual(cursor);
    expect(decodeCursor(encodeCursor(cursor, ''), '', 'mi-1')).toEqual(cursor);
  });

  it('are refused when made with another key, for another instance, or altered in any way', () => {
    const text = encodeCursor(cursor, 'k');
    rejects(() => decodeCursor(text, 'other-key', 'mi-1'));
    rejects(() => decodeCursor(text, 'k', 'mi-2'));
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
      rejects(() => decodeCursor(bad, 'k', 'mi-1'));
    }
  });
});
