import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DataOf, errorResponses } from '../../core/schemas/common.js';
import {
  CallbackQuery,
  PasswordSignInBody,
  ProviderParams,
  SessionStateSchema,
  SignInMethodSchema,
  SignInMethodsQuery,
  SignInStartQuery,
} from '../../core/schemas/sign-in.js';
import { type SignInService, SignInRefused } from '../../services/sign-in/service.js';
import { appError } from '../../core/errors.js';
import {
  attemptIdOf,
  checkSameOrigin,
  clearAttemptCookie,
  clearSessionCookie,
  sessionIdOf,
  setAttemptCookie,
  setSessionCookie,
} from '../plugins/session-cookie.js';

/** Where a browser whose sign-in failed is sent back to, with the reason. */
const SIGN_IN_PAGE = '/ui/sign-in';

const Redirect = Type.Null({ description: 'A redirect (`Location`)' });

/** A browser asks for a page; a program for JSON (or for nothing in particular). */
const wantsPage = (request: FastifyRequest) => (request.headers.accept ?? '').includes('text/html');

/**
 * Signing in and out (no bearer token needed): the ways offered, the redirect to an issuer and its callback, the
 * password, and the end of a session. The session lives in an HttpOnly cookie (plugins/session-cookie.ts).
 */
export const signInRoutes: FastifyPluginAsyncTypebox<{ signIn: SignInService }> = async (app, { signIn }) => {
  app.get(
    '/auth/providers',
    {
      schema: {
        operationId: 'listSignInMethods',
        tags: ['sign-in'],
        summary: 'The ways to sign in here; with organizationId, only those that organization permits',
        security: [],
        querystring: SignInMethodsQuery,
        response: { 200: DataOf(Type.Array(SignInMethodSchema)), ...errorResponses() },
      },
    },
    async (request) => ({ data: await signIn.methods(request.query.organizationId) }),
  );

  app.get(
    '/auth/session',
    {
      schema: {
        operationId: 'getSession',
        tags: ['sign-in'],
        summary: "The session the request's cookie carries, or null (never 401: a page asks before it signs in)",
        security: [],
        response: { 200: DataOf(SessionStateSchema), ...errorResponses() },
      },
    },
    async (request) => {
      const id = sessionIdOf(request, signIn);
      const caller = id === undefined ? null : await signIn.sessions.authenticate(id);
      const session = caller?.session;
      return {
        data: session === undefined ? null : { provider: session.provider, expiresAt: session.expiresAt.toISOString() },
      };
    },
  );

  app.get(
    '/auth/sign-in/:provider',
    {
      schema: {
        operationId: 'startSignIn',
        tags: ['sign-in'],
        summary: "Redirect to the provider's issuer (PKCE, state and nonce); it sends the browser back to the callback",
        security: [],
        params: ProviderParams,
        querystring: SignInStartQuery,
        response: { 302: Redirect, ...errorResponses(404, 429) },
      },
    },
    async (request, reply) => {
      const { redirect, attemptId, attemptMaxAgeMs } = await signIn.begin(request.params.provider, {
        ...request.query,
        address: request.ip,
      });
      setAttemptCookie(reply, signIn, attemptId, attemptMaxAgeMs);
      reply.header('cache-control', 'no-store');
      return reply.redirect(redirect.href, 302);
    },
  );

  app.get(
    '/auth/callback/:provider',
    {
      schema: {
        operationId: 'completeSignIn',
        tags: ['sign-in'],
        summary:
          'The issuer sends the browser back here: on success a session cookie and a redirect to returnTo; a ' +
          'browser whose sign-in failed goes back to the sign-in page, a program gets 401 auth:sign-in:failed',
        security: [],
        params: ProviderParams,
        querystring: CallbackQuery,
        response: { 302: Redirect, 303: Redirect, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { provider } = request.params;
      const callbackUrl = new URL(request.url, `${signIn.publicUrl}/`);
      // The redirect URI the issuer was given, with the parameters it sent.
      const redirectUri = new URL(signIn.redirectUri(provider));
      redirectUri.search = callbackUrl.search;
      clearAttemptCookie(reply, signIn);
      reply.header('cache-control', 'no-store');
      try {
        const { session, returnTo } = await signIn.complete(provider, redirectUri, attemptIdOf(request));
        setSessionCookie(reply, signIn, session.id, signIn.sessionMaxAgeMs);
        return reply.redirect(returnTo, 302);
      } catch (error) {
        if (!(error instanceof SignInRefused)) throw error;
        request.log.info({ reason: error.reason, err: error.cause }, 'sign-in refused');
        if (!wantsPage(request)) throw appError('auth:sign-in:failed');
        const page = new URLSearchParams({ error: error.reason, returnTo: error.returnTo });
        return reply.redirect(`${SIGN_IN_PAGE}?${page}`, 303);
      }
    },
  );

  app.post(
    '/auth/password',
    {
      schema: {
        operationId: 'signInWithPassword',
        tags: ['sign-in'],
        summary:
          'Sign in with an email and a password (EMAIL_PASSWORD): 204 and the session cookie; any failure is the ' +
          'same 401 auth:sign-in:failed',
        security: [],
        body: PasswordSignInBody,
        response: { 204: Type.Null(), ...errorResponses(403, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      // A page of another site must not sign its visitor in as someone else (login CSRF).
      if (request.headers.origin !== undefined) checkSameOrigin(request, signIn);
      const { email, password } = request.body;
      const session = await signIn.passwordSignIn(email, password, request.ip);
      setSessionCookie(reply, signIn, session.id, signIn.sessionMaxAgeMs);
      reply.header('cache-control', 'no-store');
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/auth/sign-out',
    {
      schema: {
        operationId: 'signOut',
        tags: ['sign-in'],
        summary: 'End the session of the cookie on the server and clear the cookie (204 also when there was none)',
        security: [],
        response: { 204: Type.Null(), ...errorResponses(403) },
      },
    },
    async (request, reply) => signOut(request, reply, signIn),
  );
};

async function signOut(request: FastifyRequest, reply: FastifyReply, signIn: SignInService) {
  const id = sessionIdOf(request, signIn);
  if (id !== undefined) {
    checkSameOrigin(request, signIn);
    await signIn.sessions.end(id);
  }
  clearSessionCookie(reply, signIn);
  return reply.code(204).send(null);
}
