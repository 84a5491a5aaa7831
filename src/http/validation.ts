import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { listDetail, type ErrorDetail } from '../core/errors.js';

function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv.default({
    allErrors: true,
    strict: false,
    coerceTypes: coerceTypes ? 'array' : false,
    // Unknown properties are rejected, never silently removed.
    removeAdditional: false,
    useDefaults: true,
  });
  addFormats.default(ajv);
  return ajv;
}

export const strictAjv = makeAjv(false);
const coercingAjv = makeAjv(true);

/** JSON bodies are validated strictly; query strings and paths may be coerced. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema as object);

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** One line per bad field, each naming it by its path. */
export function describeValidationErrors(errors: ErrorObject[], context: string): ErrorDetail {
  const root = PART_NAMES[context] ?? context;
  const items = new Set<string>();
  for (const e of errors) {
    const path = root + e.instancePath.split('/').slice(1).map(segment).join('');
    if (e.keyword === 'required') {
      items.add(`${path}${segment(String(e.params.missingProperty))}: is required`);
    } else if (e.keyword === 'additionalProperties') {
      items.add(`${path}${segment(String(e.params.additionalProperty))}: is not allowed`);
    } else if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      items.add(`${path}: does not match any allowed form`);
    } else {
      items.add(`${path}: ${e.message ?? 'is invalid'}`);
    }
  }
  return listDetail('Invalid fields', [...items]);
}

function segment(raw: string): string {
  const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
  if (/^\d+$/.test(key)) return `[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
