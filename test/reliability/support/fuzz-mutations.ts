// Mutations any request may get on top of its route's generator: another method, odd or oversized
// headers, another Content-Type, a broken or oversized body (invalid UTF-8, NUL bytes, truncation),
// a bent target. Each is data (so fast-check shrinks it away when it is not the cause).
import fc from 'fast-check';
import type { FuzzRequestInit } from './fuzz-request.js';

/** The server's BODY_LIMIT_BYTES (the default); the fuzzer sends bodies just past it. */
export const BODY_LIMIT_BYTES = 1_048_576;

export const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'HEAD',
  'TRACE',
  'CONNECT',
  'PROPFIND',
  'SEARCH',
  'QUERY',
  'MKCOL',
  'LOCK',
  'PURGE',
  'LINK',
  'REPORT',
  'M-SEARCH',
];

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json;charset="utf-8"',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'Application/Json ; Charset=utf-8',
  'application/json; foo=bar; foo=baz',
  'application/json;',
  'application/json, text/plain',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json+foo',
  'application/vnd.api+json',
  'application/problem+json',
  '',
  ';',
  '*/*',
  'application/*',
  'application',
  '/json',
  'application/json\t',
  'application/json; charset=\xff',
  'x'.repeat(2_000),
];

const HEADER_NOISE: [string, string][] = [
  ['Accept', 'text/event-stream'],
  ['Accept', 'application/xml'],
  ['Accept', '*/*;q=0'],
  ['Accept', 'x'.repeat(3_000)],
  ['Accept-Encoding', 'gzip, br, zstd'],
  ['Content-Encoding', 'gzip'],
  ['Content-Encoding', 'identity'],
  ['Content-Encoding', 'x-unknown'],
  ['Expect', '100-continue'],
  ['Expect', 'x-unknown'],
  ['X-Request-Id', 'fuzz-id-1'],
  ['X-Request-Id', 'bad id with spaces'],
  ['X-Request-Id', 'x'.repeat(200)],
  ['X-Request-Id', ''],
  ['X-Request-Id', '\xff\xfe'],
  ['Last-Event-ID', 'garbage'],
  ['Range', 'bytes=0-1'],
  ['If-None-Match', '*'],
  ['If-Modified-Since', 'yesterday'],
  ['Origin', 'null'],
  ['Cookie', 'a=b; __proto__=c'],
  ['X-Forwarded-For', '1.2.3.4, ::1, garbage'],
  ['X-Forwarded-Host', 'evil.example'],
  ['X-Forwarded-Proto', 'gopher'],
  ['Forwarded', 'for=unknown;proto=x'],
  ['Upgrade', 'websocket'],
  ['Upgrade', 'h2c'],
  ['TE', 'trailers'],
  ['Keep-Alive', 'timeout=1000000'],
  ['Via', '1.1 x'],
  ['Max-Forwards', '-1'],
  ['Host', ''],
  ['Host', 'evil.example'],
  ['Host', 'a'.repeat(1_000)],
  ['Host', '127.0.0.1:99999'],
  ['Host', '[::1'],
  ['__proto__', 'x'],
  ['constructor', 'y'],
  ['Connection', 'keep-alive'],
  ['Connection', 'close, x-custom'],
  ['X-Empty', ''],
  ['X-Latin1', '\xe9\xff'],
  ['X-Tab', 'a\tb'],
];

type Mutation =
  | { kind: 'method'; method: string }
  | { kind: 'header'; header: [string, string] }
  | { kind: 'contentType'; value: string; replace: boolean }
  | { kind: 'hugeHeader'; size: number }
  | { kind: 'manyHeaders'; count: number }
  | { kind: 'noHost' }
  | { kind: 'body'; body: Buffer }
  | { kind: 'bodyBytes'; at: number; bytes: number[] }
  | { kind: 'truncate'; at: number }
  | { kind: 'oversized'; extra: number }
  | { kind: 'target'; how: 'suffix' | 'prefix' | 'upper' | 'slash'; text: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...METHODS).map((method): Mutation => ({ kind: 'method', method })) },
  { weight: 5, arbitrary: fc.constantFrom(...HEADER_NOISE).map((header): Mutation => ({ kind: 'header', header })) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('contentType' as const),
      value: fc.constantFrom(...CONTENT_TYPES),
      replace: fc.boolean(),
    }),
  },
  // Headers past Node's 16 KiB limit (431), and just under it.
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(8_000, 16_000, 16_385, 20_000, 70_000)
      .map((size): Mutation => ({ kind: 'hugeHeader', size })),
  },
  { weight: 1, arbitrary: fc.constantFrom(100, 500, 2_100).map((count): Mutation => ({ kind: 'manyHeaders', count })) },
  { weight: 1, arbitrary: fc.constant<Mutation>({ kind: 'noHost' }) },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '',
        ' ',
        '\r\n',
        'null',
        '"x"',
        '1',
        '[]',
        'true',
        '{',
        '{"a":',
        '\ufeff{}',
        '{}garbage',
        '{"a":1}{"b":2}',
        "{'a':1}",
        '{a:1}',
        '{"a":1,}',
        'NaN',
        '\u0000',
        '%7B%7D',
        'a=1&b=2',
      )
      .map((text): Mutation => ({ kind: 'body', body: Buffer.from(text, 'utf8') })),
  },
  // Invalid UTF-8, NUL and control bytes inside the body.
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('bodyBytes' as const),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      bytes: fc.constantFrom<number[]>(
        [0x00],
        [0xff],
        [0xc0, 0xaf],
        [0xed, 0xa0, 0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0x80],
        [0xe2, 0x82],
        [0x1b],
        [0x0b],
        [0xfe, 0xff],
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((at): Mutation => ({ kind: 'truncate', at })),
  },
  { weight: 1, arbitrary: fc.constantFrom(1, 1_000).map((extra): Mutation => ({ kind: 'oversized', extra })) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc
        .constantFrom(
          '/',
          '//',
          '/.',
          '/..',
          '?',
          '??',
          '#frag',
          '%2F',
          '%00',
          '/%2e%2e',
          '&',
          ';x',
          '?a=1&a=2',
          `?${'q'.repeat(9_000)}=1`,
        )
        .map((text): Mutation => ({ kind: 'target', how: 'suffix', text })),
      fc
        .constantFrom('/', '//', '/x/..', '/./', '/%2e', '/api', '/%2F')
        .map((text): Mutation => ({ kind: 'target', how: 'prefix', text })),
      fc.constant<Mutation>({ kind: 'target', how: 'upper', text: '' }),
      fc.constant<Mutation>({ kind: 'target', how: 'slash', text: '' }),
    ),
  },
);

function apply(init: FuzzRequestInit, m: Mutation): FuzzRequestInit {
  const headers = [...(init.headers ?? [])];
  switch (m.kind) {
    case 'method':
      return { ...init, method: m.method };
    case 'header':
      return { ...init, headers: [...headers, m.header] };
    case 'contentType': {
      const kept = m.replace ? headers.filter(([n]) => n.toLowerCase() !== 'content-type') : headers;
      return { ...init, headers: [...kept, ['Content-Type', m.value]] };
    }
    case 'hugeHeader':
      return { ...init, headers: [...headers, ['X-Huge', 'h'.repeat(m.size)]] };
    case 'manyHeaders':
      return {
        ...init,
        headers: [
          ...headers,
          ...Array.from({ length: m.count }, (_, i) => [`X-Many-${i}`, String(i)] as [string, string]),
        ],
      };
    case 'noHost':
      return { ...init, noHost: true };
    case 'body':
      return { ...init, body: m.body };
    case 'bodyBytes': {
      const body = init.body ?? Buffer.alloc(0);
      const at = Math.floor(m.at * body.length);
      return { ...init, body: Buffer.concat([body.subarray(0, at), Buffer.from(m.bytes), body.subarray(at)]) };
    }
    case 'truncate': {
      const body = init.body ?? Buffer.alloc(0);
      return { ...init, body: body.subarray(0, Math.floor(m.at * body.length)) };
    }
    case 'oversized': {
      // Valid JSON all the way, only too long: `{"pad":"xxxx…"}`.
      const pad = BODY_LIMIT_BYTES + m.extra;
      return { ...init, body: Buffer.from(`{"pad":"${'x'.repeat(pad)}"}`, 'utf8') };
    }
    case 'target': {
      if (m.how === 'suffix') return { ...init, target: init.target + m.text };
      if (m.how === 'prefix') return { ...init, target: m.text + init.target };
      if (m.how === 'upper') return { ...init, target: init.target.toUpperCase() };
      const q = init.target.indexOf('?');
      return { ...init, target: q === -1 ? `${init.target}/` : `${init.target.slice(0, q)}/${init.target.slice(q)}` };
    }
  }
}

/** A route's requests, a quarter of them with one to three mutations. */
export function mutated(arb: fc.Arbitrary<FuzzRequestInit>): fc.Arbitrary<FuzzRequestInit> {
  return fc
    .tuple(
      arb,
      fc.oneof(
        { weight: 3, arbitrary: fc.constant([] as Mutation[]) },
        { weight: 1, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) },
      ),
    )
    .map(([init, mutations]) => mutations.reduce(apply, init));
}
