import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UI_CONTENT_SECURITY_POLICY } from '../../src/http/routes/ui.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';

const built = readdirSync(new URL('../../dist/ui/assets/', import.meta.url));
const script = built.find((f) => f.endsWith('.js'));

describe('the log explorer page at /ui/', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it.each(['/ui/', '/ui/logs'])(
    '%s is the page, under a strict Content-Security-Policy, without a token',
    async (path) => {
      const res = await t.request('GET', path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.text).toContain('<div id="app">');
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
      const csp = res.headers.get('content-security-policy');
      expect(csp).toBe(UI_CONTENT_SECURITY_POLICY);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('cache-control')).toBe('no-cache');
    },
  );

  it('/ui sends the browser to /ui/', async () => {
    const res = await fetch(`${t.url}/ui`, { redirect: 'manual' });
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('/ui/');
  });

  it('hashed assets are served with a long cache life and the same policy', async () => {
    expect(script).toBeDefined();
    const res = await t.request('GET', `/ui/assets/${script}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-security-policy')).toBe(UI_CONTENT_SECURITY_POLICY);
  });

  it.each([
    '/ui/assets/missing.js',
    '/ui/nope',
    '/ui/a/b/c',
    '/ui/.env',
    '/ui/%2e%2e/package.json',
    '/ui/assets/..%2f..%2fpackage.json',
    '/ui/..%5cpackage.json',
  ])('%s answers 404 with the error object, never a file outside the page', async (path) => {
    const res = await t.request('GET', path);
    expectError(res, 404, 'http:route:not-found');
  });

  it('another method on the page is 405 with Allow', async () => {
    const res = await t.request('POST', '/ui/logs', { body: {} });
    expectError(res, 405, 'http:method:not-allowed');
    expect(res.headers.get('allow')).toContain('GET');
  });

  it('the API around the page still needs the token', async () => {
    expectError(await t.request('GET', '/me'), 401, 'auth:token:missing');
  });
});

describe('a Berth whose page was not built', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-ui-'));
    t = await startTestApp({ config: { UI_DIR: dir } });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 ui:page:not-built, saying how to build it', async () => {
    const res = await t.request('GET', '/ui/logs');
    expectError(res, 503, 'ui:page:not-built');
    expect(res.body.description).toContain('npm run build');
  });
});
