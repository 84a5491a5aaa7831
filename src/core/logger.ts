/**
 * The part of a pino logger that services use (Fastify's request logger is one), so services log with the
 * request's context without knowing the HTTP framework.
 */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
