// Raw HTTP/1.x framing for the socket fuzzer: what fetch and node:http cannot send. Every value
// knows whether it starts with a complete, well-framed request (then an answer is owed) or is broken
// framing (then closing without an answer is fine, but an answer must still be the error object).
import fc from 'fast-check';
import { TOKENS } from '../../support/world.js';
import { bytesCommand } from './fuzz-wire.js';
import { replayPort } from './fuzz-request.js';

export class RawRequest {
  constructor(
    readonly bytes: Buffer,
    /** The bytes begin with this many complete, well-framed requests, each owed an answer (0: broken framing). */
    readonly complete: number,
    /** Methods of the requests, in order (HEAD answers have no body). */
    readonly methods: string[],
    readonly note: string,
  ) {}

  /** Broken or unfinished framing: end our side after sending, so the server sees EOF instead of waiting for more. */
  get halfClose(): boolean {
    return this.complete === 0;
  }

  describe(port = replayPort): string {
    return `(${this.note}; ${this.complete > 0 ? `${this.complete} complete request(s)` : 'broken framing'})\n  ${bytesCommand(this.bytes)} | nc 127.0.0.1 ${port}`;
  }

  toString(): string {
    return this.describe();
  }

  [fc.toStringMethod](): string {
    return `\n  ${this.describe()}\n`;
  }
}

interface Base {
  method: string;
  path: string;
  headers: string[];
  body: string;
}

const AUTH = `Authorization: Bearer ${TOKENS.owner}`;
const JSON_TYPE = 'Content-Type: application/json';

/** Well-formed requests the framing mutations start from: one per kind of route. */
export const BASES: Base[] = [
  { method: 'GET', path: '/healthz', headers: [], body: '' },
  { method: 'HEAD', path: '/openapi.json', headers: [], body: '' },
  { method: 'GET', path: '/organizations/org-a/permitted-identity-providers', headers: [AUTH], body: '' },
  {
    method: 'POST',
    path: '/organizations/org-a/api-keys',
    headers: [AUTH, JSON_TYPE],
    body: '{"data":{"name":"raw"}}',
  },
  {
    method: 'POST',
    path: '/module-categories',
    headers: [AUTH, JSON_TYPE],
    body: '{"data":{"givenId":"raw-fuzz","name":"Raw","sortOrder":1}}',
  },
  {
    method: 'POST',
    path: '/cloud/logs/logs-insights',
    headers: [AUTH, JSON_TYPE],
    body: '{"startTime":0,"endTime":"2026-01-02T00:00:00Z","environmentId":"env-a","limit":5}',
  },
  {
    method: 'POST',
    path: '/cloud/logs/local/events',
    headers: [AUTH, JSON_TYPE],
    body: '{"accountId":"acct-a","region":"eu-west-1","logGroup":"/app/raw","logStream":"s","events":[{"message":"raw"}]}',
  },
  {
    method: 'GET',
    path: '/cloud/logs/stream?accountId=acct-a&logGroups=/app/web&logStreamPrefix=web/&region=eu-west-1&tail=false',
    headers: [AUTH],
    body: '',
  },
  { method: 'GET', path: '/domains?moduleInstanceId=mi-a-web&limit=2', headers: [AUTH], body: '' },
  { method: 'POST', path: '/managed-certificates/cert-b/retry-validation', headers: [AUTH], body: '' },
];

const HOST = 'Host: 127.0.0.1';

function message(
  base: Base,
  {
    version = 'HTTP/1.1',
    eol = '\r\n',
    framing,
    close = true,
  }: { version?: string; eol?: string; framing?: string[]; close?: boolean },
): string {
  const lines = [`${base.method} ${base.path} ${version}`, HOST, ...base.headers];
  lines.push(...(framing ?? (base.body === '' ? [] : [`Content-Length: ${Buffer.byteLength(base.body)}`])));
  if (close) lines.push('Connection: close');
  return `${lines.join(eol)}${eol}${eol}`;
}

const chunked = (body: string, size = 7) => {
  const chunks: string[] = [];
  for (let i = 0; i < body.length; i += size)
    chunks.push(`${body.slice(i, i + size).length.toString(16)}\r\n${body.slice(i, i + size)}\r\n`);
  return `${chunks.join('')}0\r\n\r\n`;
};

const make = (text: string | Buffer, complete: number, methods: string[], note: string) =>
  new RawRequest(typeof text === 'string' ? Buffer.from(text, 'latin1') : text, complete, methods, note);

const base = fc.constantFrom(...BASES);
const withBody = fc.constantFrom(...BASES.filter((b) => b.body !== ''));

/** Well-framed requests of unusual forms: chunked bodies, HTTP/1.0, trailers, chunk extensions, pipelining. */
const wellFramed: fc.Arbitrary<RawRequest> = fc.oneof(
  base.map((b) => make(`${message(b, {})}${b.body}`, 1, [b.method], 'plain request')),
  fc
    .tuple(withBody, fc.integer({ min: 1, max: 40 }))
    .map(([b, size]) =>
      make(
        `${message(b, { framing: ['Transfer-Encoding: chunked'] })}${chunked(b.body, size)}`,
        1,
        [b.method],
        `chunked, ${size}-byte chunks`,
      ),
    ),
  withBody.map((b) =>
    make(
      `${message(b, { framing: ['Transfer-Encoding: chunked'] })}${chunked(b.body).replace(/\r\n0\r\n\r\n$/, '\r\n0\r\nX-Trailer: t\r\n\r\n')}`,
      1,
      [b.method],
      'chunked with a trailer',
    ),
  ),
  withBody.map((b) =>
    make(
      `${message(b, { framing: ['Transfer-Encoding: chunked'] })}${chunked(b.body).replace(/^([0-9a-f]+)\r\n/, '$1;ext=1;q="x"\r\n')}`,
      1,
      [b.method],
      'chunk extension',
    ),
  ),
  fc.tuple(base, fc.boolean(), fc.boolean()).map(([b, host, keepAlive]) => {
    const lines = [
      `${b.method} ${b.path} HTTP/1.0`,
      ...(host ? [HOST] : []),
      ...b.headers,
      ...(b.body === '' ? [] : [`Content-Length: ${Buffer.byteLength(b.body)}`]),
      ...(keepAlive ? ['Connection: keep-alive'] : []),
    ];
    return make(
      `${lines.join('\r\n')}\r\n\r\n${b.body}`,
      1,
      [b.method],
      `HTTP/1.0${host ? '' : ' without Host'}${keepAlive ? ', keep-alive' : ''}`,
    );
  }),
  fc
    .tuple(base, base)
    .map(([a, b]) =>
      make(
        `${message(a, { close: false })}${a.body}${message(b, {})}${b.body}`,
        2,
        [a.method, b.method],
        'two pipelined requests',
      ),
    ),
);

const BAD_CHUNK_SIZES = [
  'zz',
  '-1',
  'ffffffffffffffffffff',
  '0x5',
  ' 5',
  '5 5',
  '',
  '1;',
  '\x00',
  '+5',
  '5\r',
  'fffffff',
];
const TE_VARIANTS = [
  'chunked, identity',
  'identity',
  'xchunked',
  'chunked, chunked',
  'gzip',
  ' chunked',
  'chunked\x00',
  'Chunked',
  'chunked;q=1',
  'identity, chunked',
];
const CL_VARIANTS = [
  ['5', '6'],
  ['5', '5'],
  ['5, 5'],
  ['+5'],
  ['0x5'],
  ['-1'],
  ['99999999999999999999'],
  ['5 '],
  [' 5'],
  ['5\x00'],
  [''],
  ['1e3'],
];
const BAD_HEADER_LINES = [
  'Bad Header: x',
  '(x): y',
  ': novalue',
  'X\x00: y',
  'X\x7f: y',
  '\xe9: y',
  '[]: y',
  'X : y',
  'X: a\x00b',
  'X: a\rb',
  'X: a\x01b',
  'X: a\x7fb',
  'X: \xff',
  'NoColon',
  ' Leading: space',
  'X: a\r\n folded',
  'X:\ta\t',
  `X-Long: ${'v'.repeat(70_000)}`,
  'Host: a\x00b',
  'Authorization: Bearer \x00',
  'Content-Type: application/json\x00',
];
const REQUEST_LINES = [
  'GET  /healthz HTTP/1.1',
  'GET /healthz HTTP/1.1 extra',
  'GET /healthz HTTP/2.0',
  'GET /healthz HTTP/1.2',
  'GET /healthz HTTP/9.9',
  'GET /healthz http/1.1',
  'get /healthz HTTP/1.1',
  'G\x00T /healthz HTTP/1.1',
  `${'X'.repeat(10_000)} / HTTP/1.1`,
  `GET /${'a'.repeat(100_000)} HTTP/1.1`,
  'GET /healthz',
  'GET',
  '',
  'GET /healthz HTTP/1.1\x00',
  'GET /heal\x00thz HTTP/1.1',
  'GET /heal thz HTTP/1.1',
  'GET \x7f HTTP/1.1',
  'GET /\xff\xfe HTTP/1.1',
  'GET http://[::1/ HTTP/1.1',
  'GET * HTTP/1.1',
  'OPTIONS * HTTP/1.1',
  'FOO /healthz HTTP/1.1',
  'CONNECT 127.0.0.1:443 HTTP/1.1',
  'PRI * HTTP/2.0',
  'GET /healthz HTTP/1.1\t',
  '\tGET /healthz HTTP/1.1',
  'GET\t/healthz\tHTTP/1.1',
  'GET /healthz HTTP/01.1',
  'GET /healthz HTTP/1.1.1',
  'GET /healthz HTTP/',
  'GET /healthz HTTP/1.',
  'GET /healthz HTTP/a.b',
];

/** Broken framing: conflicting lengths, bad chunks, bad header lines, bare LF, HTTP/0.9, absurd request lines, NUL bytes, truncation. */
const broken: fc.Arbitrary<RawRequest> = fc.oneof(
  fc
    .tuple(withBody, fc.constantFrom(...CL_VARIANTS))
    .map(([b, values]) =>
      make(
        `${message(b, { framing: values.map((v) => `Content-Length: ${v}`) })}${b.body}`,
        0,
        [b.method],
        `Content-Length ${JSON.stringify(values)}`,
      ),
    ),
  withBody.map((b) =>
    make(
      `${message(b, { framing: [`Content-Length: ${Buffer.byteLength(b.body)}`, 'Transfer-Encoding: chunked'] })}${chunked(b.body)}`,
      0,
      [b.method],
      'Content-Length and Transfer-Encoding',
    ),
  ),
  fc
    .tuple(withBody, fc.constantFrom(...TE_VARIANTS))
    .map(([b, te]) =>
      make(
        `${message(b, { framing: [`Transfer-Encoding: ${te}`] })}${chunked(b.body)}`,
        0,
        [b.method],
        `Transfer-Encoding ${JSON.stringify(te)}`,
      ),
    ),
  fc
    .tuple(withBody, fc.constantFrom(...BAD_CHUNK_SIZES))
    .map(([b, size]) =>
      make(
        `${message(b, { framing: ['Transfer-Encoding: chunked'] })}${size}\r\n${b.body}\r\n0\r\n\r\n`,
        0,
        [b.method],
        `chunk size ${JSON.stringify(size)}`,
      ),
    ),
  fc.tuple(withBody, fc.double({ min: 0, max: 0.99, noNaN: true })).map(([b, cut]) => {
    const full = `${message(b, { framing: ['Transfer-Encoding: chunked'] })}${chunked(b.body, 5)}`;
    return make(full.slice(0, Math.floor(cut * full.length)), 0, [b.method], 'truncated chunked request');
  }),
  fc
    .tuple(withBody, fc.integer({ min: 1, max: 1_000 }))
    .map(([b, missing]) =>
      make(
        `${message(b, { framing: [`Content-Length: ${Buffer.byteLength(b.body) + missing}`] })}${b.body}`,
        0,
        [b.method],
        `body ${missing} bytes short of Content-Length`,
      ),
    ),
  fc.tuple(base, fc.constantFrom(...BAD_HEADER_LINES), fc.nat()).map(([b, line, at]) => {
    const lines = message(b, {}).split('\r\n');
    lines.splice(1 + (at % (lines.length - 2)), 0, line);
    return make(`${lines.join('\r\n')}${b.body}`, 0, [b.method], `header line ${JSON.stringify(line.slice(0, 60))}`);
  }),
  base.map((b) => make(`${message(b, { eol: '\n' })}${b.body}`, 0, [b.method], 'bare LF line endings')),
  base.map((b) => make(`${message(b, {}).replace('\r\n', '\n')}${b.body}`, 0, [b.method], 'one bare LF')),
  fc.constantFrom('/healthz', '/openapi.json', '/').map((p) => make(`GET ${p}\r\n`, 0, ['GET'], 'HTTP/0.9')),
  fc
    .constantFrom(...REQUEST_LINES)
    .map((line) =>
      make(
        `${line}\r\n${HOST}\r\nConnection: close\r\n\r\n`,
        0,
        ['GET'],
        `request line ${JSON.stringify(line.slice(0, 60))}`,
      ),
    ),
  fc
    .tuple(base, fc.nat(), fc.constantFrom([0x00], [0x00, 0x00], [0xff], [0x0d], [0x0a], [0x80], [0x7f]))
    .map(([b, at, bytes]) => {
      const bytesOf = Buffer.from(`${message(b, {})}${b.body}`, 'latin1');
      const i = at % bytesOf.length;
      return make(
        Buffer.concat([bytesOf.subarray(0, i), Buffer.from(bytes), bytesOf.subarray(i)]),
        0,
        [b.method],
        `bytes ${JSON.stringify(bytes)} inserted at ${i}`,
      );
    }),
  fc.tuple(base, fc.nat(), fc.nat({ max: 255 })).map(([b, at, byte]) => {
    const bytesOf = Buffer.from(`${message(b, {})}${b.body}`, 'latin1');
    const head = bytesOf.indexOf('\r\n\r\n');
    const i = at % head;
    bytesOf[i] = byte;
    return make(bytesOf, 0, [b.method], `head byte ${i} set to 0x${byte.toString(16)}`);
  }),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => make(Buffer.from(bytes), 0, [], 'random bytes')),
  fc.constant(make(Buffer.from('160301005a010000560303', 'hex'), 0, [], 'a TLS ClientHello')),
  fc.constant(make('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 0, [], 'the HTTP/2 preface')),
);

const GARBAGE = [
  '\x00\x00\x00',
  'garbage\r\n\r\n',
  'GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n',
  '\r\n\r\n\r\n',
  'GE',
  `${'x'.repeat(20_000)}\r\n`,
  'GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
];

/** A well-framed request (kept open) followed by garbage on the same connection. */
const pipelinedGarbage: fc.Arbitrary<RawRequest> = fc
  .tuple(base, fc.constantFrom(...GARBAGE))
  .map(([b, garbage]) =>
    make(
      `${message(b, { close: false })}${b.body}${garbage}`,
      1,
      [b.method],
      `garbage ${JSON.stringify(garbage.slice(0, 40))} after a valid request`,
    ),
  );

export const rawRequest: fc.Arbitrary<RawRequest> = fc.oneof(
  { weight: 2, arbitrary: wellFramed },
  { weight: 6, arbitrary: broken },
  { weight: 2, arbitrary: pipelinedGarbage },
);
