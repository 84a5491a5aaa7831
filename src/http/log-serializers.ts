import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { RequestLogger } from './request-logger.js';

type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>;

/** Query parameters clients put credentials in (compared case-insensitively). */
const SECRET_QUERY_PARAMETERS = new Set(['access_token', 'token', 'api_key', 'apikey', 'key']);

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/** The URL with the value of every credential-bearing query parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const pairs = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=', 1)[0]!;
      return SECRET_QUERY_PARAMETERS.has(decodedName(name)) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, start + 1)}${pairs.join('&')}`;
}

/** Fastify's own request serializer, with the credentials of the query string taken out. */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** The server's logger options: nothing that authenticates a caller reaches the log. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    serializers: { req: serializeRequest },
  };
}

/**
 * One access-log line per request, written when it completes (method, URL, address, status, time), as an HTTP
 * server's access log has it. Fastify's default writes a second line when the request arrives, which at
 * `LOG_LEVEL=info` cost about a sixth of a `/healthz` (docs/performance.md); that line is kept at `debug`.
 */
export class AccessLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' });
  }

  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (reply.log instanceof RequestLogger)
      // Without making the request's child logger when nothing else logged through it (request-logger.ts).
      reply.log.line('info', { req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
