import { expect } from 'vitest';
import type { TestResponse } from './app.js';

const ERROR_KEYS = new Set([
  'code',
  'message',
  'description',
  'action',
  'details',
  'isInternal',
  'metadata',
  'requestId',
]);

/** The response is the spec's error object, exactly, with this status and code. */
export function expectError(res: TestResponse, status: number, code?: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, ...(code ? { body: { code } } : {}) });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = res.body as Record<string, unknown>;
  for (const key of Object.keys(body)) expect(ERROR_KEYS.has(key), `unexpected error property ${key}`).toBe(true);
  expect(typeof body.code).toBe('string');
  expect(body.code).toMatch(/^[a-z0-9-]+:[a-z0-9-]+:[a-z0-9-]+$/);
  expect(typeof body.message).toBe('string');
  expect(body.requestId).toBe(res.headers.get('x-request-id'));
  if (status < 500) expect(body.isInternal).toBeUndefined();
}
