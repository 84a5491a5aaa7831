/**
 * A real OpenID Provider for tests: the certified `oidc-provider` package, in process, on a loopback port, with
 * its development login and consent pages. `signIn()` walks them like a person would (a cookie jar, form posts);
 * `tamper` re-signs the ID token of the next token responses with the provider's own key, so a test can hand
 * Berth a token with a wrong nonce, audience or expiry that is otherwise perfectly valid.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import type { ExternalProvider } from '../../src/core/enums.js';
import type { OidcProviderSettings } from '../../src/core/schemas/sign-in-config.js';

export interface OidcAccount {
  sub: string;
  email?: string;
  emailVerified?: boolean;
}

/** Berth's settings entry for this provider standing for `provider`. */
export function settingsFor(
  op: TestOidcProvider,
  provider: ExternalProvider,
  options: { scopes?: string[]; displayName?: string; linkByVerifiedEmail?: boolean } = {},
): OidcProviderSettings {
  return {
    provider,
    issuer: new URL(op.issuer),
    clientId: op.clientId,
    clientSecret: op.clientSecret,
    scopes: options.scopes ?? ['openid'],
    displayName: options.displayName ?? provider,
    linkByVerifiedEmail: options.linkByVerifiedEmail ?? false,
  };
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Starts the provider with Berth's redirect URI (known once Berth listens); until then it answers 503. */
  allowRedirects(uris: string[]): void;
  accounts: Map<string, OidcAccount>;
  /** Rewrites the claims of the ID token in the next token responses; undefined: none. */
  tamper: ((claims: Record<string, unknown>) => Record<string, unknown>) | undefined;
  close(): Promise<void>;
}

export async function startOidcProvider(
  options: { clientId?: string; clientSecret?: string } = {},
): Promise<TestOidcProvider> {
  const clientId = options.clientId ?? 'berth-test';
  const clientSecret = options.clientSecret ?? 'berth-test-secret-0123456789abcdef';
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const signingKey = await importJWK(jwk, 'RS256');
  const accounts = new Map<string, OidcAccount>();

  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  /** The provider is made once Berth's redirect URI is known (Berth needs the issuer first). */
  const configure = (redirectUris: string[]) => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: redirectUris,
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      jwks: { keys: [jwk] },
      cookies: { keys: ['test-cookie-key-0123456789'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      features: { devInteractions: { enabled: true } },
      findAccount: (_ctx, id) => {
        const account = accounts.get(id);
        if (account === undefined) return undefined;
        return {
          accountId: id,
          claims: () => ({
            sub: account.sub,
            ...(account.email === undefined
              ? {}
              : { email: account.email, email_verified: account.emailVerified ?? false }),
          }),
        };
      },
    });
    callback = provider.callback();
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (callback === undefined) {
      res.writeHead(503).end();
      return;
    }
    const rewrite = state.tamper;
    if (rewrite !== undefined && req.method === 'POST' && req.url?.startsWith('/token')) {
      interceptJson(res, async (body) => {
        if (typeof body.id_token !== 'string') return body;
        const claims = rewrite(decodeJwt(body.id_token) as Record<string, unknown>);
        const idToken = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: 'test-key', typ: 'JWT' })
          .sign(signingKey);
        return { ...body, id_token: idToken };
      });
    }
    callback(req, res);
  };
  server.on('request', handle);

  const state: TestOidcProvider = {
    issuer,
    clientId,
    clientSecret,
    accounts,
    tamper: undefined,
    allowRedirects: configure,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return state;
}

/** Lets `rewrite` change a JSON body the provider writes with one `end()` (Koa does). */
function interceptJson(
  res: ServerResponse,
  rewrite: (body: Record<string, unknown>) => Promise<Record<string, unknown>>,
) {
  const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
  res.end = ((chunk?: unknown) => {
    const text = Buffer.isBuffer(chunk) ? chunk.toString('utf8') : typeof chunk === 'string' ? chunk : '';
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return end(chunk);
    }
    void rewrite(parsed).then((body) => {
      const out = JSON.stringify(body);
      if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(out));
      end(out);
    });
    return res;
  }) as typeof res.end;
}

/** A browser-like walk: follows redirects by hand, keeps cookies per host (paths ignored), posts the forms. */
export class CookieJar {
  readonly #cookies = new Map<string, Map<string, string>>();

  header(url: URL): string | undefined {
    const jar = this.#cookies.get(url.host);
    if (jar === undefined || jar.size === 0) return undefined;
    return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  store(url: URL, response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      let jar = this.#cookies.get(url.host);
      if (jar === undefined) {
        jar = new Map();
        this.#cookies.set(url.host, jar);
      }
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
  }

  get(host: string, name: string): string | undefined {
    return this.#cookies.get(host)?.get(name);
  }

  set(host: string, name: string, value: string): void {
    let jar = this.#cookies.get(host);
    if (jar === undefined) {
      jar = new Map();
      this.#cookies.set(host, jar);
    }
    jar.set(name, value);
  }
}

export interface Hop {
  url: URL;
  response: Response;
}

/** One request with the jar's cookies, no redirect followed. */
export async function browserFetch(
  jar: CookieJar,
  url: URL,
  init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
  const cookie = jar.header(url);
  if (cookie !== undefined) headers.cookie = cookie;
  let body: string | undefined;
  if (init.form !== undefined) {
    body = new URLSearchParams(init.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const response = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
  jar.store(url, response);
  return response;
}

/**
 * Walks a sign-in from Berth's `/auth/sign-in/{provider}` through the provider's login and consent pages, and
 * stops at the first answer outside the provider (Berth's callback, unless `stopAtCallback`): returns every hop.
 */
export async function walkSignIn(
  jar: CookieJar,
  start: URL,
  provider: TestOidcProvider,
  login: string,
  { stopAtCallback = false }: { stopAtCallback?: boolean } = {},
): Promise<Hop[]> {
  const hops: Hop[] = [];
  const issuerHost = new URL(provider.issuer).host;
  let url = start;
  let response = await browserFetch(jar, url);
  hops.push({ url, response });
  for (let i = 0; i < 20; i += 1) {
    if (url.host === issuerHost && url.pathname.startsWith('/interaction/') && response.status === 200) {
      const page = await response.text();
      const prompt = page.includes('name="login"') ? 'login' : 'consent';
      const form: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
      response = await browserFetch(jar, url, { method: 'POST', form });
      hops.push({ url, response });
      continue;
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || location === null) return hops;
    const next = new URL(location, url);
    if (stopAtCallback && next.host !== issuerHost) {
      hops.push({ url: next, response });
      return hops;
    }
    url = next;
    response = await browserFetch(jar, url);
    hops.push({ url, response });
    if (url.host !== issuerHost && !url.pathname.startsWith('/auth/sign-in/')) return hops;
  }
  throw new Error(`sign-in did not finish: ${hops.map((h) => `${h.response.status} ${h.url.href}`).join('\n')}`);
}
