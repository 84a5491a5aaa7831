// HTTP/1.1 on a raw TCP socket, for the fuzzers: one connection per request, the bytes sent exactly
// as generated (fetch and node:http refuse or rewrite most of what the fuzzers send), the responses
// parsed here (status line, headers, Content-Length / chunked / close-delimited bodies, 1xx skipped).
import { connect } from 'node:net';

export interface WireResponse {
  status: number;
  /** Header names lower-cased; a repeated header keeps every value. */
  headers: Map<string, string[]>;
  body: Buffer;
  /** The body ended because the client cut it (a live stream), not because it was complete. */
  cut: boolean;
}

export interface Exchange {
  responses: WireResponse[];
  /** The server closed (or reset) the connection. */
  closed: boolean;
  /** Nothing more came within the time limit (the socket was then destroyed by the client). */
  timedOut: boolean;
  /** Bytes after the last complete response that do not parse as one (a truncated or garbled answer). */
  trailing: Buffer;
}

export interface ExchangeOptions {
  /** Methods of the requests in the order sent, to know which responses have no body (HEAD). */
  methods: string[];
  /** Ends the client's side after sending (for incomplete framing: the server then sees EOF instead of waiting). */
  halfClose?: boolean;
  /** Gives up after this long without the expected answers. */
  timeoutMs?: number;
  /** A response still open this long after its first body bytes (a live tail) is cut. */
  streamCutMs?: number;
}

/** Sends `bytes` on a new connection and collects every response until the server closes or all expected answers arrived. */
export function exchange(port: number, bytes: Buffer, options: ExchangeOptions): Promise<Exchange> {
  const { methods, halfClose = false, timeoutMs = 20_000, streamCutMs = 1_500 } = options;
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let finished = false;
    let cutTimer: NodeJS.Timeout | undefined;
    const finish = (how: { closed?: boolean; timedOut?: boolean; cut?: boolean }) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(cutTimer);
      socket.destroy();
      const parsed = parseResponses(
        received,
        methods,
        how.cut === true || how.closed === true || how.timedOut === true,
      );
      resolve({
        responses: parsed.responses,
        closed: how.closed === true,
        timedOut: how.timedOut === true,
        trailing: parsed.rest,
      });
    };
    const timer = setTimeout(() => finish({ timedOut: true }), timeoutMs);
    socket.on('error', () => undefined);
    socket.on('close', () => finish({ closed: true }));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parseResponses(received, methods, false);
      if (parsed.responses.length >= methods.length) return finish({});
      // A body under way that does not end by itself (an SSE tail): cut it a moment after it started.
      if (cutTimer === undefined && parsed.partialBody) cutTimer = setTimeout(() => finish({ cut: true }), streamCutMs);
    });
    socket.once('connect', () => {
      // Writes may fail once the server has answered and closed (e.g. a refused oversized body): the answer still counts.
      socket.write(bytes, () => {
        if (halfClose) socket.end();
      });
    });
  });
}

interface Parsed {
  responses: WireResponse[];
  rest: Buffer;
  /** The next response is an event stream whose head was read and whose body has not ended. */
  partialBody: boolean;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * Every complete response in `data`. With `atEnd` (the connection is over), a close-delimited body
 * ends there and a started body is returned as cut.
 */
export function parseResponses(data: Buffer, methods: string[], atEnd: boolean): Parsed {
  const responses: WireResponse[] = [];
  let offset = 0;
  for (;;) {
    const headEnd = data.indexOf(HEAD_END, offset);
    if (headEnd === -1) return { responses, rest: data.subarray(offset), partialBody: false };
    const head = data.subarray(offset, headEnd).toString('latin1').split('\r\n');
    const statusMatch = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(head[0] ?? '');
    if (!statusMatch) return { responses, rest: data.subarray(offset), partialBody: false };
    const status = Number(statusMatch[1]);
    const headers = new Map<string, string[]>();
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) return { responses, rest: data.subarray(offset), partialBody: false };
      const name = line.slice(0, colon).trim().toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      offset = bodyStart;
      continue;
    }
    const method = methods[responses.length] ?? 'GET';
    const te = (headers.get('transfer-encoding') ?? []).join(',').toLowerCase();
    const cl = headers.get('content-length');
    let body: Buffer;
    let end: number;
    let cut = false;
    if (method === 'HEAD' || status === 204 || status === 304) {
      body = Buffer.alloc(0);
      end = bodyStart;
    } else if (te.includes('chunked')) {
      const chunked = readChunked(data, bodyStart);
      if (chunked === undefined || !chunked.complete) {
        const streaming = (headers.get('content-type')?.[0] ?? '').startsWith('text/event-stream');
        if (!atEnd) return { responses, rest: data.subarray(offset), partialBody: streaming };
        body = chunked?.body ?? Buffer.alloc(0);
        end = data.length;
        cut = true;
      } else {
        body = chunked.body;
        end = chunked.end;
      }
    } else if (cl !== undefined) {
      const length = Number(cl[0]);
      if (cl.length !== 1 || !Number.isSafeInteger(length) || length < 0)
        return { responses, rest: data.subarray(offset), partialBody: false };
      if (data.length < bodyStart + length) {
        return { responses, rest: data.subarray(offset), partialBody: false };
      }
      body = data.subarray(bodyStart, bodyStart + length);
      end = bodyStart + length;
    } else {
      if (!atEnd) return { responses, rest: data.subarray(offset), partialBody: false };
      body = data.subarray(bodyStart);
      end = data.length;
    }
    responses.push({ status, headers, body, cut });
    offset = end;
  }
}

function readChunked(data: Buffer, start: number): { body: Buffer; end: number; complete: boolean } | undefined {
  const parts: Buffer[] = [];
  let pos = start;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', pos);
    if (lineEnd === -1) return { body: Buffer.concat(parts), end: pos, complete: false };
    const size = Number.parseInt(data.subarray(pos, lineEnd).toString('latin1').split(';')[0]!, 16);
    if (!Number.isSafeInteger(size) || size < 0) return undefined;
    if (size === 0) {
      const trailerEnd = data.indexOf(HEAD_END, lineEnd);
      const end = data.subarray(lineEnd, lineEnd + 4).equals(HEAD_END)
        ? lineEnd + 4
        : trailerEnd === -1
          ? -1
          : trailerEnd + 4;
      if (end === -1) return { body: Buffer.concat(parts), end: pos, complete: false };
      return { body: Buffer.concat(parts), end, complete: true };
    }
    if (data.length < lineEnd + 2 + size + 2)
      return { body: Buffer.concat([...parts, data.subarray(lineEnd + 2)]), end: pos, complete: false };
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    pos = lineEnd + 2 + size + 2;
  }
}

const ERROR_KEYS = new Set([
  'code',
  'message',
  'description',
  'action',
  'details',
  'isInternal',
  'metadata',
  'requestId',
]);
const CODE = /^[a-z0-9-]+:[a-z0-9-]+:[a-z0-9-]+$/;

/**
 * What is wrong with one response (empty: nothing). Never a 5xx; a non-2xx answer carries exactly the
 * error object (test/support/assertions.ts): JSON, only the allowed keys, a well-formed code, a
 * message, requestId equal to x-request-id, no isInternal below 500. A HEAD answer has no body to check.
 */
export function responseProblems(res: WireResponse, method: string): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`status ${res.status}`);
  if (res.status >= 200 && res.status < 300) return problems;
  // A redirect (the page's /ui → /ui/) is not an error: it has a Location and no error object.
  if (res.status >= 300 && res.status < 400) {
    if (res.status !== 304 && !res.headers.get('location')?.[0])
      problems.push(`redirect ${res.status} without Location`);
    return problems;
  }
  if (method === 'HEAD') return problems;
  const type = res.headers.get('content-type')?.[0] ?? '';
  if (!/^application\/json/.test(type)) problems.push(`error content-type is '${type}'`);
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    problems.push(`error body is not JSON: ${JSON.stringify(res.body.toString('latin1').slice(0, 200))}`);
    return problems;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return [...problems, 'error body is not an object'];
  const object = body as Record<string, unknown>;
  for (const key of Object.keys(object)) if (!ERROR_KEYS.has(key)) problems.push(`unexpected error property '${key}'`);
  if (typeof object.code !== 'string' || !CODE.test(object.code))
    problems.push(`bad code ${JSON.stringify(object.code)}`);
  if (typeof object.message !== 'string') problems.push('message is not a string');
  const requestId = res.headers.get('x-request-id')?.[0];
  if (typeof object.requestId !== 'string' || object.requestId !== requestId) {
    problems.push(
      `requestId ${JSON.stringify(object.requestId)} differs from x-request-id ${JSON.stringify(requestId)}`,
    );
  }
  if (res.status < 500 && object.isInternal !== undefined) problems.push('isInternal on a client error');
  return problems;
}

/** A short, readable account of an answer for failure messages. */
export function describeResponse(res: WireResponse): string {
  const head = [...res.headers].map(([k, v]) => `${k}: ${v.join(', ')}`).join('; ');
  return `${res.status} {${head}} ${JSON.stringify(res.body.toString('latin1').slice(0, 400))}${res.cut ? ' (cut by the client)' : ''}`;
}

/**
 * Bytes as a shell command writing them exactly (NULs included, long runs folded: `b"x"*1048576`):
 * pipe it into `nc 127.0.0.1 PORT` to replay a request, or into `curl --data-binary @-` for a body.
 */
export function bytesCommand(bytes: Buffer): string {
  const parts: string[] = [];
  let literal = '';
  const flush = () => {
    if (literal !== '') parts.push(`b"${literal}"`);
    literal = '';
  };
  for (let i = 0; i < bytes.length; ) {
    const fold = repetition(bytes, i);
    if (fold !== undefined) {
      flush();
      parts.push(`b"${[...bytes.subarray(i, i + fold.unit)].map(escapeByte).join('')}"*${fold.count}`);
      i += fold.unit * fold.count;
    } else {
      literal += escapeByte(bytes[i]!);
      i += 1;
    }
  }
  flush();
  return `python3 -c 'import sys; sys.stdout.buffer.write(${parts.join(' + ') || 'b""'})'`;
}

/** A unit of 1–4 bytes repeated at `at` over at least 32 bytes. */
function repetition(bytes: Buffer, at: number): { unit: number; count: number } | undefined {
  for (let unit = 1; unit <= 4; unit++) {
    let end = at + unit;
    while (end < bytes.length && bytes[end] === bytes[end - unit]) end += 1;
    const count = Math.floor((end - at) / unit);
    if (count * unit >= 32 && count >= 8) return { unit, count };
  }
  return undefined;
}

function escapeByte(byte: number): string {
  if (byte === 0x22) return '\\"';
  if (byte === 0x5c) return '\\\\';
  if (byte >= 0x20 && byte < 0x7f && byte !== 0x27) return String.fromCharCode(byte);
  if (byte === 0x0d) return '\\r';
  if (byte === 0x0a) return '\\n';
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}
