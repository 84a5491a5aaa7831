import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, appError, renderError, type ErrorCode } from '../errors.js';
import { describeValidationErrors } from '../validation.js';

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
    return appError('validation:request:invalid-body', { description: fe.message });
  }
  return appError('internal:server:unexpected', {
    internal: true,
    metadata: { name: error.name, message: error.message },
    cause: error,
  });
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  reply.header('x-request-id', request.id);
  const superadmin = request.caller?.superadmin === true;
  return reply.code(error.status).type('application/json; charset=utf-8').send(renderError(error, request.id, superadmin));
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appErr = toAppError(error);
    if (appErr.status >= 500) request.log.error({ err: error, code: appErr.code }, 'request failed');
    else request.log.info({ code: appErr.code, status: appErr.status }, 'request rejected');
    return sendError(request, reply, appErr);
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, appError('http:route:not-found')));
}
