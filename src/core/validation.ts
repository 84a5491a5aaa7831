// Schema validation with Ajv, shared by the HTTP layer, the fixture loader and the CLI: one Ajv per mode, and one
// way to say what is wrong (one line per field).
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { allowedValues } from './enums.js';
import { listDetail, type ErrorDetail } from './errors.js';
import { PRINTABLE_NAME_PATTERN, STORABLE_TEXT_PATTERN } from './schemas/common.js';

function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv.default({
    allErrors: true,
    strict: false,
    coerceTypes: coerceTypes ? 'array' : false,
    // Unknown properties are rejected, never silently removed.
    removeAdditional: false,
    useDefaults: true,
    // The failing schema comes with each error: messages name the allowed values and formats.
    verbose: true,
  });
  addFormats.default(ajv);
  return ajv;
}

export const strictAjv = makeAjv(false);
/** Query strings and paths: values may be coerced from their text. */
export const coercingAjv = makeAjv(true);

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** One line per bad field, each naming it by its path and saying what it must be. */
export function describeValidationErrors(errors: ErrorObject[], context: string): ErrorDetail {
  const root = PART_NAMES[context] ?? context;
  const pathOf = (e: ErrorObject) => root + e.instancePath.split('/').slice(1).map(segment).join('');
  // Errors inside an anyOf/oneOf are the alternatives that failed: the anyOf itself says it in one line.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const insideUnion = (e: ErrorObject) =>
    unions.some(
      (u) => u !== e && e.schemaPath.startsWith(`${u.schemaPath}/`) && e.instancePath.startsWith(u.instancePath),
    );
  const byField = new Map<string, string>();
  for (const e of errors) {
    if (insideUnion(e)) continue;
    let field = pathOf(e);
    let message: string;
    if (e.keyword === 'required') {
      field += segment(String(e.params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      field += segment(String(e.params.additionalProperty));
      message = 'is not allowed';
    } else if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      // The one alternative of the value's own type, when there is one, says what is wrong with it.
      const inside = errors.filter((c) => c.schemaPath.startsWith(`${e.schemaPath}/`));
      const branchOf = (c: ErrorObject) => c.schemaPath.slice(e.schemaPath.length + 1).split('/')[0];
      const wrongType = new Set(
        inside.filter((c) => c.keyword === 'type' && c.instancePath === e.instancePath).map(branchOf),
      );
      const typed = inside.filter((c) => !wrongType.has(branchOf(c)));
      const branches = new Set(typed.map(branchOf));
      message =
        branches.size === 1 && typed[0]!.instancePath === e.instancePath
          ? fieldMessage(typed[0]!)
          : unionMessage(e.schema as JsonSchema[]);
    } else {
      message = fieldMessage(e);
    }
    // One message per field: the first that the schema's order gives.
    if (!byField.has(field)) byField.set(field, `${field}: ${message}`);
  }
  return listDetail('Invalid fields', [...byField.values()]);
}

interface JsonSchema {
  const?: unknown;
  enum?: unknown[];
  type?: string | string[];
  anyOf?: JsonSchema[];
  pattern?: string;
  description?: string;
}

const quote = (v: unknown) => JSON.stringify(v);

function unionMessage(branches: JsonSchema[]): string {
  const values = allowedValues({ anyOf: branches });
  if (values !== undefined) return `must be one of ${values.map(quote).join(', ')}`;
  const types = branches.map((b) => (Array.isArray(b.type) ? b.type.join(' or ') : b.type));
  if (types.every((t) => t !== undefined)) return `must be ${[...new Set(types.map(article))].join(' or ')}`;
  return 'does not match any allowed form';
}

const article = (type: string | undefined) =>
  type === 'integer' || type === 'object' || type === 'array' ? `an ${type}` : `a ${type}`;

/** Patterns shared by many fields, said in words rather than as a regex. */
const PATTERN_WORDS: Record<string, string> = {
  [STORABLE_TEXT_PATTERN]: 'must not contain NUL characters or unpaired surrogates',
  [PRINTABLE_NAME_PATTERN]: 'must not contain control characters or unpaired surrogates',
};

function fieldMessage(e: ErrorObject): string {
  const schema = (e.parentSchema ?? {}) as JsonSchema & { 'x-format'?: string };
  switch (e.keyword) {
    case 'enum':
      return `must be one of ${(e.params.allowedValues as unknown[]).map(quote).join(', ')}`;
    case 'const':
      return `must be ${quote(e.params.allowedValue)}`;
    case 'type':
      return `must be ${String(e.params.type).split(',').map(article).join(' or ')}`;
    case 'pattern': {
      const known = PATTERN_WORDS[String(e.params.pattern)];
      if (known !== undefined) return known;
      if (schema['x-format'] !== undefined) return `must be ${schema['x-format']}`;
      return 'is not in the expected format';
    }
    default:
      return e.message ?? 'is invalid';
  }
}

function segment(raw: string): string {
  const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
  if (/^\d+$/.test(key)) return `[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
