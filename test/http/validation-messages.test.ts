// Every 400 from schema validation says, once per wrong field, what the field must be: the allowed values of a
// closed set, the types of a union, a format in words (never a raw regular expression). The same for settings.
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { literalUnion, SERVER_LOG_LEVELS } from '../../src/core/enums.js';
import { Text } from '../../src/core/schemas/common.js';
import { describeValidationErrors, strictAjv } from '../../src/core/validation.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { TOKENS } from '../support/world.js';

function messages(schema: object, value: unknown): string[] {
  const validate = strictAjv.compile(schema);
  expect(validate(value)).toBe(false);
  return describeValidationErrors(validate.errors ?? [], 'body').items ?? [];
}

describe('describeValidationErrors', () => {
  const schema = Type.Object(
    {
      color: literalUnion(['red', 'green'] as const),
      when: Type.Union([Type.String(), Type.Integer()]),
      size: Type.Optional(Type.Integer({ minimum: 1 })),
      name: Type.Optional(Text()),
      at: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ maximum: 10 })])),
    },
    { additionalProperties: false },
  );

  it('names the allowed values of a closed set', () => {
    expect(messages(schema, { color: 'blue', when: 1 })).toEqual(['body.color: must be one of "red", "green"']);
  });

  it('says the types of a union in one message', () => {
    expect(messages(schema, { color: 'red', when: true })).toEqual(['body.when: must be a string or an integer']);
  });

  it("in a union, lets the alternative of the value's own type say what is wrong", () => {
    expect(messages(schema, { color: 'red', when: 1, at: 11 })).toEqual(['body.at: must be <= 10']);
    expect(messages(schema, { color: 'red', when: 1, at: '' })).toEqual([
      'body.at: must NOT have fewer than 1 characters',
    ]);
  });

  it('gives one message per field, several fields each their own', () => {
    expect(messages(schema, { color: 1, when: null, size: 0, extra: 1 })).toEqual([
      'body.extra: is not allowed',
      'body.color: must be one of "red", "green"',
      'body.when: must be a string or an integer',
      'body.size: must be >= 1',
    ]);
  });

  it('says a shared pattern in words', () => {
    expect(messages(schema, { color: 'red', when: 1, name: 'a\u0000b' })).toEqual([
      'body.name: must not contain NUL characters or unpaired surrogates',
    ]);
  });
});

describe('over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('"endTime": true is one message naming both allowed types', async () => {
    const res = await t.request('POST', '/cloud/logs/logs-insights', {
      token: TOKENS.owner,
      body: { startTime: 0, endTime: true },
    });
    expect(res.status).toBe(400);
    expect(res.body.details[0].items).toEqual(['body.endTime: must be a string or an integer']);
  });

  it('a bad givenId says what a given id is, not its regular expression', async () => {
    const res = await t.request('POST', '/module-categories', {
      token: TOKENS.owner,
      body: { data: { givenId: 'Bad Id!', name: 'x', sortOrder: 1 } },
    });
    expect(res.status).toBe(400);
    const items: string[] = res.body.details[0].items;
    expect(items).toEqual([expect.stringMatching(/^body\.data\.givenId: must be a slug of 1-64 lowercase letters/)]);
    expect(items.join()).not.toMatch(/[\^$\\[\]]/);
  });
});

describe('settings', () => {
  it('LOG_LEVEL=loud lists the allowed levels, one line per setting', () => {
    let error: unknown;
    try {
      loadConfig({ LOG_LEVEL: 'loud', PORT: 'x' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as Error).message
      .split('\n')
      .slice(1)
      .map((l) => l.trim());
    expect(lines).toEqual([
      'PORT: Expected integer (got "x")',
      `LOG_LEVEL: must be one of ${SERVER_LOG_LEVELS.join(', ')} (got "loud")`,
    ]);
  });
});
