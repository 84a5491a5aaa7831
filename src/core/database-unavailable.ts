/**
 * Telling "the database cannot be reached or has died" apart from every other failure: the first
 * is an outage the caller may retry (503), the second a bug (500).
 */

/** Thrown by the store while its database is down: PGlite dead or reopening, or closed. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Socket-level failures reaching a PostgreSQL server (node-postgres passes them through). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away or refusing connections: class 08 (connection
 * exception), 53300 too_many_connections, 57P01-57P03 (admin or crash shutdown, cannot connect now).
 */
function unavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code === '53300' || code === '57P01' || code === '57P02' || code === '57P03';
}

/** node-postgres's own messages for a connection that broke, never came up, or stopped answering. */
const PG_CLIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'is not queryable',
];

/** Whether `error`, as node-postgres reports it, means the server is unreachable, down, or restarting. */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (NETWORK_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && unavailableSqlState(code)))
  )
    return true;
  return PG_CLIENT_MESSAGES.some((m) => error.message.includes(m));
}

/** The store's errors, as they leave it: a connection failure becomes DatabaseUnavailableError (the cause kept). */
export function asUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError || !isConnectionFailure(error)) return error;
  return new DatabaseUnavailableError(`the database is unreachable: ${(error as Error).message}`, { cause: error });
}

/**
 * Whether `error` (or an error it wraps) is the store saying the database is down. Only errors
 * the store classified count: a socket error from elsewhere (an AWS call) is not a database outage.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return true;
  }
  return false;
}
