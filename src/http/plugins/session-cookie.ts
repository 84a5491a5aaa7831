import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { appError } from '../../core/errors.js';
import type { SignInService } from '../../services/sign-in/service.js';

/** The session cookie: `__Host-berth_session` over HTTPS (Secure, no Domain, Path=/), else `berth_session`. */
export const SESSION_COOKIE = 'berth_session';
export const SECURE_SESSION_COOKIE = '__Host-berth_session';
/** The browser's half of a sign-in at an issuer, read by the callback only. */
const ATTEMPT_COOKIE = 'berth_sign_in';
const ATTEMPT_PATH = '/auth/callback/';

type CookieSite = Pick<SignInService, 'secure'>;

const sessionCookieName = (site: CookieSite) => (site.secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE);

/** The session id the request's cookie carries, if any (only the name this deployment sets counts). */
export function sessionIdOf(request: FastifyRequest, site: CookieSite): string | undefined {
  const value = request.cookies[sessionCookieName(site)];
  return value === undefined || value === '' || value.length > 256 ? undefined : value;
}

export function setSessionCookie(reply: FastifyReply, site: CookieSite, id: string, maxAgeMs: number): void {
  reply.setCookie(sessionCookieName(site), id, {
    httpOnly: true,
    sameSite: 'lax',
    secure: site.secure,
    path: '/',
    maxAge: Math.floor(maxAgeMs / 1000),
  });
}

export function clearSessionCookie(reply: FastifyReply, site: CookieSite): void {
  reply.clearCookie(sessionCookieName(site), { httpOnly: true, sameSite: 'lax', secure: site.secure, path: '/' });
}

export function setAttemptCookie(reply: FastifyReply, site: CookieSite, id: string, maxAgeMs: number): void {
  reply.setCookie(ATTEMPT_COOKIE, id, {
    httpOnly: true,
    // The issuer sends the browser back with a top-level GET: Lax lets the cookie come along.
    sameSite: 'lax',
    secure: site.secure,
    path: ATTEMPT_PATH,
    maxAge: Math.floor(maxAgeMs / 1000),
  });
}

export function attemptIdOf(request: FastifyRequest): string | undefined {
  const value = request.cookies[ATTEMPT_COOKIE];
  return value === undefined || value === '' || value.length > 256 ? undefined : value;
}

export function clearAttemptCookie(reply: FastifyReply, site: CookieSite): void {
  reply.clearCookie(ATTEMPT_COOKIE, { httpOnly: true, sameSite: 'lax', secure: site.secure, path: ATTEMPT_PATH });
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site safety of cookie-authenticated requests: a write must carry an `Origin` equal to the public URL's
 * (browsers send it on every cross-origin request and on same-origin writes), and a log stream opened with the
 * cookie must not come from another origin (`Origin`, or `Sec-Fetch-Site` when a browser sends it). Otherwise
 * 403 `auth:request:cross-origin`. A bearer token needs none of this: no browser attaches it by itself.
 */
export function checkSameOrigin(
  request: FastifyRequest,
  site: Pick<SignInService, 'isOwnOrigin'>,
  { stream = false } = {},
): void {
  const origin = request.headers.origin;
  const fetchSite = request.headers['sec-fetch-site'];
  if (!SAFE_METHODS.has(request.method)) {
    if (origin === undefined || !site.isOwnOrigin(origin)) throw crossOrigin();
    return;
  }
  if (!stream) return;
  if (origin !== undefined && !site.isOwnOrigin(origin)) throw crossOrigin();
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') throw crossOrigin();
}

const crossOrigin = () =>
  appError('auth:request:cross-origin', {
    description: "Requests signed in with the session cookie must come from Berth's own pages.",
  });
