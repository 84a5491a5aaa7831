import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/core/errors.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/assertions.js';
import { TOKENS } from '../support/world.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { BODY_LIMIT_BYTES: 4096 } });
  // A route that fails unexpectedly, to see what a 500 looks like.
  t.app.log.level = 'silent';
});
afterAll(async () => t.close());

describe('the error model', () => {
  it('answers unknown routes with 404, and another method on a known path with 405', async () => {
    expectError(await t.request('GET', '/nope'), 404, 'http:route:not-found');
    expectError(
      await t.request('DELETE', '/module-categories', { token: TOKENS.owner }),
      405,
      'http:method:not-allowed',
    );
  });

  it('answers malformed JSON with 400', async () => {
    const res = await t.request('POST', '/module-categories', {
      token: TOKENS.owner,
      rawBody: '{"data": {',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'validation:request:malformed-json');
  });

  it('answers a non-JSON content type with 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.request('POST', '/module-categories', {
        token: TOKENS.owner,
        rawBody: 'givenId=x',
        headers: { 'content-type': type },
      });
      expectError(res, 415, 'validation:request:unsupported-media-type');
    }
  });

  it('accepts application/json with a charset', async () => {
    const res = await t.request('POST', '/module-categories', {
      token: TOKENS.owner,
      rawBody: JSON.stringify({ data: { givenId: 'charset', name: 'C', sortOrder: 1 } }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
  });

  it('answers bodies over the limit with 413', async () => {
    const res = await t.request('POST', '/module-categories', {
      token: TOKENS.owner,
      body: { data: { givenId: 'big', name: 'B', sortOrder: 1, description: 'x'.repeat(5000) } },
    });
    expectError(res, 413, 'validation:request:body-too-large');
  });

  it('checks authentication before the body', async () => {
    const res = await t.request('POST', '/module-categories', {
      rawBody: '{bad',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 401, 'auth:token:missing');
  });

  it('strips prototype pollution keys instead of honouring them', async () => {
    const res = await t.request('POST', '/module-categories', {
      token: TOKENS.owner,
      rawBody: '{"data":{"givenId":"proto","name":"P","sortOrder":1,"__proto__":{"isAdmin":true}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  it('echoes a well-formed incoming x-request-id and replaces a malformed one', async () => {
    const ok = await t.request('GET', '/nope', { headers: { 'x-request-id': 'trace-123' } });
    expect(ok.body.requestId).toBe('trace-123');
    const bad = await t.request('GET', '/nope', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(bad.body.requestId).toMatch(/^req_/);
  });

  it('never answers with anything but the error object, whatever the request', async () => {
    const weird: [string, string, Record<string, string>?, string?][] = [
      ['POST', '/module-categories', { 'content-type': 'application/json' }, '\u0000'],
      ['POST', '/module-categories', { 'content-type': 'application/json' }, '"just a string"'],
      ['POST', '/module-categories', { 'content-type': 'application/json' }, '9'.repeat(400)],
      ['POST', '/module-categories', { 'content-type': 'application/json' }, '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['],
      ['GET', '/module-categories/%E0%A4%A', {}],
      ['PUT', '/module-categories', { 'content-type': 'application/json' }, '{}'],
    ];
    for (const [method, path, headers, body] of weird) {
      const res = await t.request(method, path, { token: TOKENS.owner, headers, rawBody: body });
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectError(res, res.status);
    }
  });
});

describe('the error catalogue', () => {
  it('agrees with docs/errors.md', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z0-9:-]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(rows).toEqual(Object.entries(CATALOGUE).map(([code, e]) => [code, e.status]));
  });

  it('uses lower-kebab-case namespace:entity:reason codes', () => {
    for (const code of Object.keys(CATALOGUE))
      expect(code).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*(:[a-z0-9]+(-[a-z0-9]+)*){2}$/);
  });
});

describe('GET /metrics', () => {
  it('serves Prometheus metrics by operation, without authentication', async () => {
    await t.request('GET', '/module-categories', { token: TOKENS.owner });
    const res = await t.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/berth_http_request_duration_seconds_bucket\{[^}]*operation="listModuleCategories"/);
    expect(res.text).toMatch(/^berth_log_streams_active 0$/m);
    expect(res.text).toMatch(/^berth_log_stream_upstream_polls_total \d+$/m);
  });
});
