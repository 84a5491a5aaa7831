import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../../services/authenticate.js';
import type { Caller } from '../../core/caller.js';
import { appError } from '../../core/errors.js';
import type { Db } from '../../store/db.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,1024})[ \t]*$/i;

/** onRequest hook for the authenticated scope: resolves the bearer token or answers 401. */
export function authHook(db: Db) {
  return async function requireCaller(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    // Node keeps only the first Authorization header; a proxy in front may have honoured another.
    if (countHeader(request.raw.rawHeaders, 'authorization') > 1) throw appError('auth:token:invalid');
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') throw appError('auth:token:missing');
    const match = BEARER.exec(header);
    if (!match?.[1]) throw appError('auth:token:invalid');
    const caller = await authenticate(db, match[1]);
    if (caller === null) throw appError('auth:token:invalid');
    request.caller = caller;
    request.log = request.log.child({ principalId: caller.principalId, keyId: caller.keyId });
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
