import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document whose schemas all compile', async () => {
    const res = await t.request('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.0.0');
    const ajv = new Ajv.default({ strict: false, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        expect(op.operationId, `${method} ${path} has an operationId`).toBeTypeOf('string');
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const schema = response.content?.['application/json']?.schema;
          if (schema === undefined) continue;
          const rewritten = JSON.parse(JSON.stringify(schema).replace(/"#\/components/g, '"doc#/components'));
          expect(() => ajv.compile(rewritten), `${method} ${path} ${status}`).not.toThrow();
        }
      }
    }
  });

  it('marks no parameter with a default as required (limit of the paged lists among them)', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const withDefault: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const p of op.parameters ?? []) {
          if (p.schema?.default === undefined) continue;
          withDefault.push(`${method} ${path} ${p.name}`);
          expect(p.required, `${method} ${path} ${p.name}`).not.toBe(true);
        }
      }
    }
    expect(withDefault).toEqual(
      expect.arrayContaining(['get /domains limit', 'get /organizations/{organizationId}/api-keys limit']),
    );
  });

  it('states that exactly one of logStreamPrefix and logStreamNames is given, and what an empty prefix means', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const params = doc.paths['/cloud/logs/stream'].get.parameters as { name: string; description?: string }[];
    for (const name of ['logStreamPrefix', 'logStreamNames']) {
      expect(params.find((p) => p.name === name)?.description).toMatch(
        /Exactly one of logStreamPrefix and logStreamNames/,
      );
    }
    expect(params.find((p) => p.name === 'logStreamPrefix')?.description).toMatch(/empty prefix.*every stream/i);
  });

  it('documents every registered route with its error responses', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const documented = new Set<string>();
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    expect(listRoutes(t).length).toBeGreaterThan(5);
    for (const route of listRoutes(t)) {
      expect(documented.has(`${route.method} ${route.url}`), `${route.method} ${route.url} is documented`).toBe(true);
    }
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (op.security?.length === 0) continue;
        expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['400', '401', '500']));
        expect(op.responses['401'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
      }
    }
  });
});

function listRoutes(app: TestApp): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = [];
  for (const r of (app.app as unknown as { berthRoutes: { method: string; url: string }[] }).berthRoutes) {
    // The log explorer's page and files (/ui/…) are not API operations.
    if (r.method === 'HEAD' || r.url === '/ui' || r.url.startsWith('/ui/')) continue;
    out.push({ method: r.method, url: r.url.replace(/:([A-Za-z]+)/g, '{$1}') });
  }
  return out;
}
