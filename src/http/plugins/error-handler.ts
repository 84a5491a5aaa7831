import { randomBytes } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { lingeringClose } from './lingering-close.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { AppError, appError, databaseUnavailable, renderError, type ErrorCode } from '../../core/errors.js';
import { isDatabaseUnavailable } from '../../core/database-unavailable.js';
import { describeValidationErrors } from '../../core/validation.js';

/** On every response, error or not, including the ones written below Fastify. */
export const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const;

/** Longer path parameters are refused before routing; shorter ones reach schema validation. */
export const MAX_PARAM_LENGTH = 4096;

/** A description quoting a framework message stays short: it may echo the request. */
const MAX_ECHO_LENGTH = 200;

/** Random bytes for 1,024 request ids, drawn at once: one call into the CSPRNG per 1,024 requests, not one each. */
const ID_BYTES = 12;
const IDS_PER_DRAW = 1_024;
let idPool = Buffer.alloc(0);
let idOffset = 0;

/** `req_` and 12 random bytes (base64url): unique per request, unguessable, never reused. */
export function newRequestId(): string {
  if (idOffset + ID_BYTES > idPool.length) {
    idPool = randomBytes(ID_BYTES * IDS_PER_DRAW);
    idOffset = 0;
  }
  const id = idPool.toString('base64url', idOffset, idOffset + ID_BYTES);
  idOffset += ID_BYTES;
  return `req_${id}`;
}

const VALIDATION_CODES: Record<string, ErrorCode> = {
  body: 'validation:request:invalid-body',
  querystring: 'validation:request:invalid-query',
  params: 'validation:request:invalid-params',
  headers: 'validation:request:invalid-headers',
};

/** Fastify's own client errors, mapped onto the catalogue. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'validation:request:unsupported-media-type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'validation:request:body-too-large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation:request:invalid-headers',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'validation:request:malformed-json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'validation:request:malformed-json',
  FST_ERR_CTP_INVALID_TYPE: 'validation:request:unsupported-media-type',
};

export function toAppError(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const fe = error as FastifyError;
  if (fe.validation !== undefined) {
    const context = fe.validationContext ?? 'body';
    return appError(VALIDATION_CODES[context] ?? 'validation:request:invalid-body', {
      details: [describeValidationErrors(fe.validation as never, context)],
    });
  }
  const mapped = fe.code !== undefined ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped !== undefined) return appError(mapped);
  if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
    return appError('validation:request:invalid-body', { description: fe.message.slice(0, MAX_ECHO_LENGTH) });
  }
  if (isDatabaseUnavailable(error)) return databaseUnavailable(error);
  return appError('internal:server:unexpected', {
    internal: true,
    metadata: { name: error.name, message: error.message },
    cause: error,
  });
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  reply.headers(SECURITY_HEADERS);
  reply.header('x-request-id', request.id);
  const superadmin = request.caller?.superadmin === true;
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(renderError(error, request.id, superadmin));
}

/**
 * Fastify's `frameworkErrors`: faults found while routing, before any hook runs. Their messages
 * quote the whole URL, so none of it reaches the body.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      sendError(
        request,
        reply,
        appError('validation:request:invalid-params', { description: 'A path segment is not valid percent-encoding.' }),
      );
      return;
    case 'FST_ERR_MAX_PARAM_LENGTH':
      sendError(
        request,
        reply,
        appError('validation:request:invalid-params', {
          description: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`,
        }),
      );
      return;
    default:
      sendError(
        request,
        reply,
        appError('internal:server:unexpected', { metadata: { code: error.code }, cause: error }),
      );
  }
}

const CLIENT_ERROR_CODES: Record<string, ErrorCode> = {
  HPE_HEADER_OVERFLOW: 'http:request:headers-too-large',
  ERR_HTTP_REQUEST_TIMEOUT: 'http:request:timeout',
};

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (oversized headers, broken
 * framing, timeouts) never becomes a request, so the error object is written on the socket here.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // While the connection lingers, what the client still sends reaches the failed parser, which reports it again.
  if (lingering.has(socket)) return;
  // A response already under way on this socket cannot be followed by another one.
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  socket.write(rawErrorResponse(appError(CLIENT_ERROR_CODES[error.code ?? ''] ?? 'http:request:malformed')));
  // A client still sending (an 800 KB request line refused at 16 KiB) would otherwise get a reset, not the answer.
  lingering.add(socket);
  lingeringClose.call(socket);
}

/** Sockets answered by `answerClientError` and closing lingering. */
const lingering = new WeakSet<Socket>();

function rawErrorResponse(error: AppError): string {
  const requestId = newRequestId();
  const body = JSON.stringify(renderError(error, requestId, false));
  const headers = {
    ...error.headers,
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': requestId,
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...SECURITY_HEADERS,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${head.join('')}\r\n${body}`;
}

/**
 * The methods registered for a concrete URL, for the 405's `Allow`. A router of its own, fed the
 * same routes, because Fastify only answers "is this pattern registered", not "which methods match
 * this URL". Built on first use, once every route is registered.
 */
function allowedMethodsLookup(routes: readonly { method: string; url: string }[]): (url: string) => string[] {
  let lookup: ((url: string) => string[]) | undefined;
  const build = () => {
    const router = FindMyWay({ maxParamLength: MAX_PARAM_LENGTH });
    const methods = [...new Set(routes.map((r) => r.method))].sort();
    const seen = new Set<string>();
    for (const { method, url } of routes) {
      if (seen.has(`${method} ${url}`)) continue;
      seen.add(`${method} ${url}`);
      router.on(method as HTTPMethod, url, () => undefined);
    }
    return (url: string) => methods.filter((method) => router.find(method as HTTPMethod, url) !== null);
  };
  return (url) => {
    lookup ??= build();
    return lookup(url);
  };
}

export function installErrorHandling(app: FastifyInstance, routes: readonly { method: string; url: string }[]): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appErr = toAppError(error);
    if (appErr.status >= 500) request.log.error({ err: error, code: appErr.code }, 'request failed');
    else request.log.info({ code: appErr.code, status: appErr.status }, 'request rejected');
    return sendError(request, reply, appErr);
  });
  const allowedMethods = allowedMethodsLookup(routes);
  // Node hands CONNECT to 'connect' listeners and, with none, leaves the connection open unanswered.
  // Berth is no proxy: 405 on a known path (Allow names its methods), else 404; then the connection closes.
  app.server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const allowed = req.url?.startsWith('/') === true ? allowedMethods(req.url) : [];
    const error =
      allowed.length === 0
        ? appError('http:route:not-found')
        : appError('http:method:not-allowed', { headers: { allow: allowed.join(', ') } });
    socket.on('error', () => undefined);
    if (socket.writable) socket.end(rawErrorResponse(error), () => socket.destroy());
    else socket.destroy();
  });
  // Runs outside the authenticated scope: whether a method exists on a path does not depend on the token.
  app.setNotFoundHandler((request, reply) => {
    const allowed = allowedMethods(request.url);
    // A route that matched may still find nothing (a file the page does not have): that is a 404, not a 405.
    if (allowed.length === 0 || allowed.includes(request.method))
      return sendError(request, reply, appError('http:route:not-found'));
    return sendError(request, reply, appError('http:method:not-allowed', { headers: { allow: allowed.join(', ') } }));
  });
}
