import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Caller } from '../../core/caller.js';
import { AppError, appError } from '../../core/errors.js';
import { hashToken } from '../../core/tokens.js';
import type { AuthenticationService } from '../../services/authenticate.js';
import { NOT_IN_MEMORY } from '../../services/caches/cached-lookup.js';
import type { CacheInvalidation } from '../../services/caches/invalidation.js';
import type { SignInService } from '../../services/sign-in/service.js';
import type { FailedAuthGuard } from './failed-auth.js';
import { checkSameOrigin, sessionIdOf } from './session-cookie.js';
import { isIdentityProviderRoute, retryAfterSeconds, type ThrottleStats } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,1024})[ \t]*$/i;

export interface AuthHookOptions {
  /** Blocks client addresses after too many failed authentications (absent: FAILED_AUTH_MAX is 0). */
  failedAuth?: FailedAuthGuard;
  stats?: ThrottleStats;
  /** Sessions: a request without an Authorization header may be authenticated by the session cookie. */
  signIn?: Pick<SignInService, 'sessions' | 'secure' | 'isOwnOrigin'>;
}

/** The route whose session use must come from Berth's own pages even though it is a GET (an EventSource). */
const STREAM_ROUTE = '/cloud/logs/stream';

/**
 * onRequest hook for the authenticated scope: resolves the bearer token, or without one the session cookie, or
 * answers 401. A client address with too many failed authentications is answered 429 before any lookup, unless
 * its token is known valid. A cookie-authenticated request must also pass the same-origin check.
 */
export function authHook(
  authentication: Pick<AuthenticationService, 'authenticateHash' | 'knownCaller'>,
  { failedAuth, stats, signIn }: AuthHookOptions = {},
) {
  /** `bearer`: the request's token already hashed by the hot path below, when it got that far. */
  const resolveCaller = async (request: FastifyRequest, bearer?: string | AppError): Promise<void> => {
    // A bearer token wins over a cookie: programs send the header, browsers the cookie.
    const sessionId =
      signIn !== undefined && request.headers.authorization === undefined ? sessionIdOf(request, signIn) : undefined;
    if (sessionId !== undefined && signIn !== undefined) {
      checkSameOrigin(request, signIn, { stream: request.routeOptions.url === STREAM_ROUTE });
      const address = request.ip;
      if (failedAuth !== undefined && failedAuth.blockedFor(address) > 0) {
        stats?.count('failed-auth');
        throw tooManyFailures(request, failedAuth.blockedFor(address));
      }
      const caller = await signIn.sessions.authenticate(sessionId);
      if (caller === null) {
        failedAuth?.failed(address);
        throw appError('auth:session:invalid');
      }
      setCaller(request, caller);
      return;
    }
    const tokenHash = bearer ?? bearerTokenHash(request);
    if (failedAuth !== undefined) {
      const blockedMs = failedAuth.blockedFor(request.ip);
      if (blockedMs > 0 && (tokenHash instanceof AppError || !failedAuth.isKnownValid(tokenHash))) {
        stats?.count('failed-auth');
        throw tooManyFailures(request, blockedMs);
      }
    }
    if (tokenHash instanceof AppError) {
      failedAuth?.failed(request.ip);
      throw tokenHash;
    }
    const caller = await authentication.authenticateHash(tokenHash);
    if (caller === null) {
      failedAuth?.failed(request.ip, tokenHash);
      throw appError('auth:token:invalid');
    }
    failedAuth?.succeeded(tokenHash);
    setCaller(request, caller);
  };
  // The hot path, a bearer token whose key is in memory from an address that is not blocked, answers without a
  // promise; everything else (a session, a miss, a failure) takes the path above.
  return function requireCaller(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
    let tokenHash: string | AppError | undefined;
    if (request.headers.authorization !== undefined) {
      // Hashed once: the cache, the failed-authentication guard and the path above all take the hash.
      tokenHash = bearerTokenHash(request);
      if (
        !(tokenHash instanceof AppError) &&
        (failedAuth === undefined || failedAuth.blockedFor(request.ip) === 0 || failedAuth.isKnownValid(tokenHash))
      ) {
        const caller = authentication.knownCaller(tokenHash);
        if (caller !== NOT_IN_MEMORY && caller !== null) {
          failedAuth?.succeeded(tokenHash);
          setCaller(request, caller);
          done();
          return;
        }
      }
    }
    resolveCaller(request, tokenHash).then(() => done(), done);
  };
}

function setCaller(request: FastifyRequest, caller: Caller): void {
  request.caller = caller;
  const bindings =
    caller.keyId === null
      ? { principalId: caller.principalId }
      : { principalId: caller.principalId, keyId: caller.keyId };
  // The request's logger is the request's own child already: adding to it costs a fraction of another child.
  const log = request.log as typeof request.log & { setBindings?: (bindings: object) => void };
  if (log !== request.server.log && typeof log.setBindings === 'function') log.setBindings(bindings);
  else request.log = request.log.child(bindings);
}

/** The bearer token of the request, or the 401 its Authorization header earns. */
export function bearerToken(request: FastifyRequest): string | AppError {
  // Node keeps only the first Authorization header; a proxy in front may have honoured another.
  if (countHeader(request.raw.rawHeaders, 'authorization') > 1) return appError('auth:token:invalid');
  const header = request.headers.authorization;
  if (header === undefined || header.trim() === '') return appError('auth:token:missing');
  const match = BEARER.exec(header);
  if (!match?.[1]) return appError('auth:token:invalid');
  return match[1];
}

/** The SHA-256 of the request's bearer token (`hashToken`), or why it has none. */
function bearerTokenHash(request: FastifyRequest): string | AppError {
  const token = bearerToken(request);
  return token instanceof AppError ? token : hashToken(token);
}

/**
 * A blocked address: 429 with Retry-After, except on the identity-provider route, whose declared statuses exclude
 * 429: there it is the 401 a failed authentication would have earned (with the same Retry-After).
 */
function tooManyFailures(request: FastifyRequest, blockedMs: number): AppError {
  const description = 'Too many failed authentications from this address. Retry later.';
  const headers = { 'retry-after': retryAfterSeconds(blockedMs) };
  if (isIdentityProviderRoute(request)) return appError('auth:token:invalid', { description, headers });
  return appError('http:request:rate-limited', { description, headers });
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * onSend hook for the authenticated scope: the answer to a write leaves only once this replica's caches
 * have heard of what it wrote, so the caller's next request here sees it (a revoked key fails at once).
 * Other replicas hear of it within the time a notification takes.
 */
export function settleWritesHook(caches: Pick<CacheInvalidation, 'settle'>) {
  // Callback style: a read (the hot path) passes straight through, without a promise.
  return function settleWrites(
    request: FastifyRequest,
    _reply: FastifyReply,
    payload: unknown,
    done: (error: Error | null, payload?: unknown) => void,
  ): void {
    if (READS.has(request.method)) {
      done(null, payload);
      return;
    }
    caches.settle().then(
      () => done(null, payload),
      () => done(null, payload),
    );
  };
}

function countHeader(rawHeaders: string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) count += 1;
  return count;
}

/** The authenticated caller; only call inside the authenticated scope. */
export function callerOf(request: FastifyRequest): Caller {
  if (request.caller === null) throw appError('auth:token:missing');
  return request.caller;
}
