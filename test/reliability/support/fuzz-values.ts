// Hostile values for the HTTP fuzzer: JSON written as text (so that 1e400, NaN, duplicate and
// `__proto__` keys reach the server as such), strings, numbers, dates, path segments and query
// strings full of encoding tricks.
import fc from 'fast-check';
import { TOKENS } from '../../support/world.js';

/** JSON text inserted verbatim (a number spelled `1e400`, `NaN`, a truncated object…). */
export class Raw {
  constructor(readonly text: string) {}
}

/** An object written key by key, in order: duplicate keys and `__proto__` stay as written. */
export class Pairs {
  constructor(readonly pairs: [string, unknown][]) {}
}

/** A field left out of the object it would be in. */
export const OMIT = Symbol('omit');

export function jsonText(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Pairs) {
    return `{${value.pairs
      .filter(([, v]) => v !== OMIT)
      .map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`)
      .join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') return jsonText(new Pairs(Object.entries(value)));
  return JSON.stringify(value) ?? 'null';
}

type Breakage =
  | { kind: 'omit'; at: number }
  | { kind: 'hostile'; at: number; value: unknown }
  | { kind: 'extra'; at: number; pair: [string, unknown] };

/** `whole` in `whole + 2` values are left whole, the others get one to three breakages. */
function breakages<B>(one: fc.Arbitrary<B>, whole = 2): fc.Arbitrary<B[]> {
  return fc.oneof(
    { weight: whole, arbitrary: fc.constant([] as B[]) },
    { weight: 2, arbitrary: fc.array(one, { minLength: 1, maxLength: 3 }) },
  );
}

/**
 * An object of valid fields (an arbitrary may yield OMIT for an optional field), then broken a little:
 * a field left out, a field replaced by a hostile value, an unknown or `__proto__`-like field added.
 * `together`: fields that are valid only in combination (chosen together), added after `fields`.
 */
export function objectOf(
  fields: Record<string, fc.Arbitrary<unknown>>,
  { whole = 2, together = fc.constant([]) }: { whole?: number; together?: fc.Arbitrary<[string, unknown][]> } = {},
): fc.Arbitrary<Pairs> {
  const names = Object.keys(fields);
  const breakage: fc.Arbitrary<Breakage> = fc.oneof(
    fc.record({ kind: fc.constant('omit' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('hostile' as const), at: fc.nat(), value: hostileJson }),
    fc.record({ kind: fc.constant('extra' as const), at: fc.nat(), pair: extraField }),
  );
  return fc
    .tuple(fc.tuple(...Object.values(fields)), together, breakages(breakage, whole))
    .map(([values, chosen, broken]) => {
      const pairs: [string, unknown][] = [...names.map((name, i): [string, unknown] => [name, values[i]]), ...chosen];
      for (const b of broken) {
        const at = b.at % pairs.length;
        if (b.kind === 'omit') pairs[at] = [pairs[at]![0], OMIT];
        else if (b.kind === 'hostile') pairs[at] = [pairs[at]![0], b.value];
        else pairs.splice(at, 0, b.pair);
      }
      return new Pairs(pairs);
    });
}

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

const extraField: fc.Arbitrary<[string, unknown]> = fc.tuple(
  fc.oneof(fc.constantFrom(...PROTO_KEYS, 'id', 'createdAt', 'organizationId', ''), fc.string({ maxLength: 12 })),
  fc.oneof(
    fc.constantFrom<unknown>({ isAdmin: true }, new Raw('{"prototype":{"polluted":1}}'), 1, 'x', null),
    fc.constant(new Raw('{}')),
  ),
);

export const SPECIAL_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '\u{1F600}',
  '\u202e',
  '\ufeff',
  '\r\n',
  '\t',
  '\u0085',
  '\u2028',
  '../..',
  '%00',
  '%2F',
  'null',
  'true',
  '0',
  '-1',
  '1e400',
  'NaN',
  'Infinity',
  ...PROTO_KEYS,
  "' OR 1=1 --",
  "'; DROP TABLE x; --",
  '$(reboot)',
  '<script>',
  '${x}',
  '\\',
  '"',
  '\\u0000',
  'a'.repeat(129),
  'é',
  'e\u0301',
  'İ',
  'ß',
  'ﬀ',
  'Ǆ',
  '\u{10FFFF}',
  '\uFFFF',
];

/** Strings at and just past the limits the API documents (128, 256, 512, 1,024, 4,096, 256 KiB…). */
export const hugeString = fc
  .tuple(
    fc.constantFrom(101, 129, 257, 301, 513, 1_025, 2_001, 2_049, 4_097, 5_001, 65_537, 262_145, 300_000),
    fc.constantFrom('x', 'é', '\u{1F600}', '\u0000'),
  )
  .map(([n, c]) => c.repeat(c.length === 2 ? Math.ceil(n / 2) : n));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 1, arbitrary: hugeString },
);

export const RAW_NUMBERS = [
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '0.5',
  '1.0',
  '1.5e3',
  '9007199254740993',
  '253402300799999',
  '253402300800000',
  '8640000000000001',
  '-1',
  '2147483647',
  '2147483648',
  '-2147483649',
  '1E2',
  '123456789012345678901234567890',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x10',
  '01',
  '.5',
  '+1',
  '1_000',
];

export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(...RAW_NUMBERS).map((t) => new Raw(t)),
);

/** Nested far past any limit: arrays, objects, filter-like objects. */
export const deepJson: fc.Arbitrary<Raw> = fc
  .tuple(fc.constantFrom(20, 100, 1_000, 10_000, 40_000), fc.constantFrom('array', 'object'))
  .map(
    ([d, kind]) =>
      new Raw(kind === 'array' ? `${'['.repeat(d)}${']'.repeat(d)}` : `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`),
  );

export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(true, false, null, [], {}, [null], [[]], { kind: 'all' }) },
  { weight: 1, arbitrary: fc.array(fc.oneof(hostileString, hostileNumber), { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      new Raw('{"__proto__":{"polluted":true}}'),
      new Raw('{"constructor":{"prototype":{"polluted":true}}}'),
      new Raw('{"a":1,"a":2}'),
    ),
  },
  { weight: 1, arbitrary: deepJson },
);

export const DATE_STRINGS = [
  '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:00.000Z',
  '2026-01-01T01:00:00+01:00',
  '2026-01-01',
  '2026-01-01T00:00:00',
  '2026-01-01 00:00:00Z',
  '2024-02-30T00:00:00Z',
  '2023-02-29T00:00:00Z',
  '2024-13-01T00:00:00Z',
  '2024-00-10T00:00:00Z',
  '2024-01-01T24:00:00Z',
  '2024-01-01T23:59:60Z',
  '2024-01-01T00:00:00+25:00',
  '2024-01-01T00:00:00-99:99',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999-01:00',
  '10000-01-01T00:00:00Z',
  '+010000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-000001-01-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00Z',
  'now',
  'yesterday',
  '',
  ' ',
  '1700000000000',
  '0',
  '-1',
  '1.5',
  '1e3',
  '99999999999999999999',
  '253402300800000',
  '2026-01-01T00:00:00.123456789Z',
  '2026-W01-1',
  '2026-001',
  'T',
  'Z',
  '2026-01-01T00:00:00Z\u0000',
];

export const timeValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...DATE_STRINGS) },
  { weight: 2, arbitrary: fc.integer({ min: -1, max: 253402300800000 }) },
  {
    weight: 1,
    arbitrary: fc
      .date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true })
      .map((d) => d.toISOString()),
  },
  { weight: 1, arbitrary: hostileNumber },
);

/** Valid tokens of every kind of caller, and broken Authorization values. */
export const VALID_TOKENS = Object.values(TOKENS);
export const BAD_AUTHORIZATION = [
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  `Bearer berth_k-owner_wrong`,
  'Bearer berth_',
  'Bearer berth__',
  'Bearer berth_k-owner_',
  `Bearer ${'a'.repeat(1025)}`,
  `Bearer ${TOKENS.owner} extra`,
  `Bearer\t${TOKENS.owner}`,
  `Token ${TOKENS.owner}`,
  TOKENS.owner,
  `Bearer ${TOKENS.owner}\xff`,
  'Bearer berth_\xff\xfe_x',
  `Bearer "${TOKENS.owner}"`,
  `bearer ${TOKENS.admin}`,
  `BEARER   ${TOKENS.admin}   `,
  `Bearer ${TOKENS.owner}, Bearer ${TOKENS.admin}`,
  'Bearer %00',
  'Bearer berth_k-root_root-secret-00000000000001',
  'Bearer berth_k-root',
];

const LIVE_TOKENS = VALID_TOKENS.filter((t) => t !== TOKENS.expired && t !== TOKENS.revoked);

/** Mostly a live token of some role (so requests get past authentication); now and then a stale, broken, missing or doubled one. */
export const authorization: fc.Arbitrary<[string, string][]> = fc.oneof(
  {
    weight: 30,
    arbitrary: fc.constantFrom(...LIVE_TOKENS).map((t) => [['Authorization', `Bearer ${t}`]] as [string, string][]),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(TOKENS.expired, TOKENS.revoked)
      .map((t) => [['Authorization', `Bearer ${t}`]] as [string, string][]),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(...BAD_AUTHORIZATION).map((v) => [['Authorization', v]] as [string, string][]),
  },
  { weight: 1, arbitrary: fc.constant([] as [string, string][]) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...VALID_TOKENS), fc.constantFrom(...VALID_TOKENS)).map(
      ([a, b]) =>
        [
          ['Authorization', `Bearer ${a}`],
          ['authorization', `Bearer ${b}`],
        ] as [string, string][],
    ),
  },
);

/** Percent-encodes a string's UTF-8 bytes (lone surrogates become U+FFFD, as any client would send them). */
export function pct(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

export const PERCENT_TRICKS = [
  '%00',
  '%2F',
  '%2f',
  '%2e%2e',
  '%2E',
  '..',
  '.',
  '%c0%af',
  '%c0%ae',
  '%e0%80%af',
  '%f0%80%80%af',
  '%',
  '%G1',
  '%1',
  '%%',
  '%25',
  '%252F',
  '%25%32%46',
  '%ff',
  '%80',
  '%ed%a0%80',
  '%ef%bb%bf',
  '%u0041',
  '%0a',
  '%0d%0a',
  '%20',
  '+',
  ';a=b',
  '//',
  '%5c',
  '\\',
  '%3f',
  '%23',
  '%26',
  '%3d',
  '\x80',
  '\xc3\xa9',
  '\xff\xfe',
  '\xc0\xaf',
  '\xed\xa0\x80',
  '%7f',
  '%09',
  'a%00b',
  '%C3%A9',
  '%F0%9F%98%80',
  '%F4%90%80%80',
];

/** One path segment as sent: a known id, an encoded hostile string, or an encoding trick (raw bytes included). */
export function pathSegment(known: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...known).map(pct) },
    { weight: 2, arbitrary: hostileString.map(pct) },
    {
      weight: 3,
      arbitrary: fc
        .array(fc.constantFrom(...PERCENT_TRICKS, ...known), { minLength: 1, maxLength: 4 })
        .map((p) => p.join('')),
    },
    { weight: 1, arbitrary: fc.constantFrom(4_095, 4_096, 4_097, 8_000).map((n) => 'a'.repeat(n)) },
  );
}

/** Query pairs as sent (already encoded, or deliberately not). */
export type QueryPairs = [string, string | null][];

export function queryString(pairs: QueryPairs): string {
  if (pairs.length === 0) return '';
  return `?${pairs.map(([k, v]) => (v === null ? k : `${k}=${v}`)).join('&')}`;
}

/** A query value as sent: a string percent-encoded, or an encoding trick. */
export function queryValue(strings: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 2, arbitrary: strings.map(pct) },
    {
      weight: 2,
      arbitrary: fc.array(fc.constantFrom(...PERCENT_TRICKS), { minLength: 1, maxLength: 3 }).map((p) => p.join('')),
    },
  );
}

/** Valid query parameters: each name's value percent-encoded, or left out where its arbitrary yields null. */
export function params(values: Record<string, fc.Arbitrary<string | null>>): fc.Arbitrary<QueryPairs> {
  const names = Object.keys(values);
  return fc
    .tuple(...Object.values(values))
    .map((vs) => names.flatMap((name, i) => (vs[i] === null ? [] : [[name, pct(vs[i]!)] as [string, string]])));
}

type QueryBreakage =
  | { kind: 'drop' | 'weird' | 'repeat'; at: number; variant: number }
  | { kind: 'hostile'; at: number; value: string }
  | { kind: 'extra'; pair: [string, string | null] };

const EXTRA_PARAMS: [string, string | null][] = [
  ['__proto__', '1'],
  ['constructor[prototype][x]', '1'],
  ['', 'x'],
  ['x', null],
  ['%00', '1'],
  ['a%', 'b'],
  ['unknown', 'y'],
  ['', ''],
  ['&', '&'],
];

/**
 * Valid parameters broken a little: one left out, given a trick value, repeated, renamed (`name[]`,
 * `name[a]`, upper case) or left without `=`, or an unknown / `__proto__` parameter added.
 */
export function queryOf(valid: fc.Arbitrary<QueryPairs>): fc.Arbitrary<QueryPairs> {
  const breakage: fc.Arbitrary<QueryBreakage> = fc.oneof(
    fc.record({
      kind: fc.constantFrom('drop' as const, 'weird' as const, 'repeat' as const),
      at: fc.nat(),
      variant: fc.nat({ max: 4 }),
    }),
    fc.record({ kind: fc.constant('hostile' as const), at: fc.nat(), value: queryValue(hostileString) }),
    fc.record({ kind: fc.constant('extra' as const), pair: fc.constantFrom(...EXTRA_PARAMS) }),
  );
  return fc.tuple(valid, breakages(breakage)).map(([pairs, broken]) => {
    const out: QueryPairs = [...pairs];
    for (const b of broken) {
      if (b.kind === 'extra') {
        out.push(b.pair);
        continue;
      }
      if (out.length === 0) continue;
      const at = b.at % out.length;
      const [name, value] = out[at]!;
      if (b.kind === 'drop') out.splice(at, 1);
      else if (b.kind === 'hostile') out[at] = [name, b.value];
      else if (b.kind === 'repeat') out.push([name, b.variant % 2 === 0 ? value : 'other']);
      else
        out[at] = [
          [`${name}[]`, `${name}[a]`, name.toUpperCase(), name, name][b.variant]!,
          b.variant === 3 ? null : b.variant === 4 ? '' : value,
        ];
    }
    return out;
  });
}
