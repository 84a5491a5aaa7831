import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { AuthenticationService } from '../../services/authenticate.js';
import type { CacheInvalidation } from '../../services/caches/invalidation.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,1024})[ \t]*$/i;

/** onRequest hook for the authenticated scope: resolves the bearer token or answers 401. */
export function authHook(authentication: Pick<AuthenticationService, 'authenticate'>) {
  return async function requireCaller(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    // Node keeps only the first Authorization header; a proxy in front may have honoured another.
    if (countHeader(request.raw.rawHeaders, 'authorization') > 1) throw appError('auth:token:invalid');
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') throw appError('auth:token:missing');
    const match = BEARER.exec(header);
    if (!match?.[1]) throw appError('auth:token:invalid');
    const caller = await authentication.authenticate(match[1]);
    if (caller === null) throw appError('auth:token:invalid');
    request.caller = caller;
    const bindings = { principalId: caller.principalId, keyId: caller.keyId };
    // The request's logger is the request's own child already: adding to it costs a fraction of another child.
    const log = request.log as typeof request.log & { setBindings?: (bindings: object) => void };
    if (log !== request.server.log && typeof log.setBindings === 'function') log.setBindings(bindings);
    else request.log = request.log.child(bindings);
  };
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
