import type { FastifySchemaCompiler } from 'fastify';
import { coercingAjv, strictAjv } from '../core/validation.js';

/** JSON bodies are validated strictly; query strings and paths may be coerced. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema as object);
