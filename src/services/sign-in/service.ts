import { randomBytes, randomUUID } from 'node:crypto';
import type { IdentityProvider } from '../../core/enums.js';
import { appError } from '../../core/errors.js';
import { hashToken } from '../../core/tokens.js';
import { addressKey } from '../../core/client-address.js';
import { WindowCounter } from '../../core/window-counter.js';
import { OidcIssuer } from '../../providers/sign-in/oidc.js';
import type { ExternalProvider } from '../../core/enums.js';
import type { SignInSettings } from '../../core/schemas/sign-in-config.js';
import type { Db } from '../../store/db.js';
import { insertAttempt, takeAttempt } from '../../store/sign-in/attempts.js';
import { findIdentity, insertIdentity, principalsByEmail } from '../../store/sign-in/identities.js';
import type { OrganizationService } from '../organizations.js';
import { type PasswordSignIn, signInFailed } from './password.js';
import type { NewSession, SessionService } from './sessions.js';

/** A sign-in started at an issuer must come back within this time. */
const ATTEMPT_TTL_MS = 10 * 60_000;
/** Where a sign-in lands when it names no `returnTo`. */
export const DEFAULT_RETURN_TO = '/ui/logs';
const MAX_RETURN_TO = 2048;
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A way to sign in, as the sign-in page lists it. */
export interface SignInMethod {
  provider: IdentityProvider;
  displayName: string;
  /** `oidc`: a redirect to `signInUrl`; `password`: `POST /auth/password`. */
  kind: 'oidc' | 'password';
  signInUrl: string;
}

/** Why a callback failed, for the sign-in page the browser is sent back to (the API's 401 is one for all). */
export type SignInFailure = 'unknown-identity' | 'failed';

export class SignInRefused extends Error {
  constructor(
    readonly reason: SignInFailure,
    readonly returnTo: string,
    cause?: unknown,
  ) {
    super(`sign-in refused: ${reason}`, { cause });
  }
}

/**
 * People sign in: through an OpenID Connect issuer configured for a provider (a redirect there and back), or with
 * an email and a password when `EMAIL_PASSWORD` is offered. Either way the result is a server-side session that
 * remembers the provider. No one signs up: an identity must already be linked to a principal, or its verified
 * email must name exactly one principal at an issuer trusted for that (`linkByVerifiedEmail`).
 */
export class SignInService {
  readonly #issuers = new Map<ExternalProvider, OidcIssuer>();
  /** Sign-ins started per client address: each writes a row, so anonymous clients are held to a rate. */
  readonly #starts: WindowCounter;
  readonly #maxStartsPerAddress: number;
  #publicUrl: string;

  constructor(
    private readonly db: Db,
    private readonly settings: SignInSettings,
    readonly sessions: SessionService,
    private readonly password: PasswordSignIn,
    private readonly organizations: Pick<OrganizationService, 'permitted'>,
    starts: { maxPerAddress: number; windowMs: number },
  ) {
    this.#starts = new WindowCounter(starts.windowMs);
    this.#maxStartsPerAddress = starts.maxPerAddress;
    for (const entry of settings.providers) this.#issuers.set(entry.provider, new OidcIssuer(entry));
    this.#publicUrl = settings.publicUrl;
  }

  /** The base URL people reach Berth at (PUBLIC_URL, else the listening address once known). */
  get publicUrl(): string {
    return this.#publicUrl;
  }

  /** Called once the server listens, when PUBLIC_URL is unset. */
  useListeningAddress(url: string): void {
    if (this.settings.publicUrl === '') this.#publicUrl = url.replace(/\/+$/, '');
  }

  /**
   * Whether `origin` (an `Origin` header) is Berth's own: PUBLIC_URL's origin. Without PUBLIC_URL, on a loopback
   * address, `localhost`, `127.0.0.1` and `[::1]` at the listening port are one site to the person at the keyboard.
   */
  isOwnOrigin(origin: string): boolean {
    if (this.#publicUrl === '') return false;
    const own = new URL(this.#publicUrl);
    if (origin === own.origin) return true;
    if (this.settings.publicUrl !== '' || !LOOPBACK_HOSTS.has(own.hostname)) return false;
    let other: URL;
    try {
      other = new URL(origin);
    } catch {
      return false;
    }
    return other.protocol === own.protocol && other.port === own.port && LOOPBACK_HOSTS.has(other.hostname);
  }

  /** Whether a cookie should be `Secure` with the `__Host-` prefix: Berth is reached over HTTPS. */
  get secure(): boolean {
    return this.#publicUrl.startsWith('https:');
  }

  get sessionMaxAgeMs(): number {
    return this.settings.sessionMaxAgeMs;
  }

  /** The ways to sign in here; with `organizationId`, only those that organization permits (none if unknown). */
  async methods(organizationId?: string): Promise<SignInMethod[]> {
    const offered: SignInMethod[] = [];
    if (this.settings.passwordSignIn) {
      offered.push({
        provider: 'EMAIL_PASSWORD',
        displayName: 'Email and password',
        kind: 'password',
        signInUrl: '/auth/password',
      });
    }
    for (const entry of this.settings.providers) {
      offered.push({
        provider: entry.provider,
        displayName: entry.displayName,
        kind: 'oidc',
        signInUrl: `/auth/sign-in/${entry.provider}`,
      });
    }
    if (organizationId === undefined) return offered;
    const permitted = (await this.organizations.permitted(organizationId)) ?? [];
    return offered.filter((m) => permitted.includes(m.provider));
  }

  /**
   * Starts a sign-in at an issuer: the PKCE verifier, state and nonce are kept server-side under the hash of a
   * random attempt id, which the browser holds in a short-lived cookie. Returns where to send the browser.
   */
  async begin(
    provider: ExternalProvider,
    options: { returnTo?: string; organizationId?: string; address: string },
  ): Promise<{ redirect: URL; attemptId: string; attemptMaxAgeMs: number }> {
    const issuer = this.#issuer(provider);
    const returnTo = this.returnPath(options.returnTo);
    const from = addressKey(options.address);
    if (this.#starts.add(from) > this.#maxStartsPerAddress) {
      throw appError('http:request:rate-limited', {
        description: 'Too many sign-ins started from this address. Retry later.',
        headers: { 'retry-after': String(Math.max(1, Math.ceil(this.#starts.remainingMs(from) / 1000))) },
      });
    }
    let request: Awaited<ReturnType<OidcIssuer['authorizationRequest']>>;
    try {
      request = await issuer.authorizationRequest(this.redirectUri(provider));
    } catch (error) {
      throw appError('auth:sign-in:failed', {
        description: 'The identity provider cannot be reached. Retry shortly.',
        internalDescription: `discovery failed: ${(error as Error).message}`,
        cause: error,
      });
    }
    const attemptId = randomBytes(32).toString('base64url');
    await insertAttempt(this.db, hashToken(attemptId), {
      provider,
      state: request.state,
      nonce: request.nonce,
      codeVerifier: request.codeVerifier,
      returnTo,
      organizationId: options.organizationId ?? null,
      expiresAt: new Date(Date.now() + ATTEMPT_TTL_MS),
    });
    return { redirect: request.url, attemptId, attemptMaxAgeMs: ATTEMPT_TTL_MS };
  }

  /**
   * Completes a sign-in from the callback: takes the attempt (once), lets the issuer's library check state, code,
   * nonce and ID token, then finds or links the identity. Every failure is a SignInRefused.
   */
  async complete(
    provider: ExternalProvider,
    callbackUrl: URL,
    attemptId: string | undefined,
  ): Promise<{ session: NewSession; returnTo: string }> {
    const issuer = this.#issuer(provider);
    const attempt = attemptId === undefined ? undefined : await takeAttempt(this.db, hashToken(attemptId));
    if (attempt === undefined || attempt.provider !== provider || attempt.expiresAt.getTime() <= Date.now()) {
      throw new SignInRefused('failed', DEFAULT_RETURN_TO);
    }
    let identity: Awaited<ReturnType<OidcIssuer['complete']>>;
    try {
      identity = await issuer.complete(callbackUrl, attempt);
    } catch (error) {
      throw new SignInRefused('failed', attempt.returnTo, error);
    }
    const key = { provider, issuer: identity.issuer, subject: identity.subject };
    let linked = await findIdentity(this.db, key);
    if (linked === undefined && issuer.settings.linkByVerifiedEmail && identity.emailVerified && identity.email) {
      const matches = await principalsByEmail(this.db, identity.email);
      if (matches.length === 1) {
        linked = await insertIdentity(this.db, {
          id: `idn_${randomUUID()}`,
          principalId: matches[0]!.id,
          ...key,
          email: identity.email,
        });
      }
    }
    if (linked === undefined) throw new SignInRefused('unknown-identity', attempt.returnTo);
    const session = await this.sessions.create(linked.principalId, provider, linked.id);
    return { session, returnTo: attempt.returnTo };
  }

  /** `POST /auth/password`: a session for the principal the email and password name, or 401 (or 429). */
  async passwordSignIn(email: string, password: string, address: string): Promise<NewSession> {
    if (!this.settings.passwordSignIn) throw signInFailed();
    const principalId = await this.password.check(email, password, address);
    return this.sessions.create(principalId, 'EMAIL_PASSWORD', null);
  }

  /** The path a sign-in may return to: a path on this site, or a URL of its own origin; else 400. */
  returnPath(returnTo: string | undefined): string {
    if (returnTo === undefined || returnTo === '') return DEFAULT_RETURN_TO;
    const bad = () =>
      appError('auth:sign-in:bad-return-to', { description: 'returnTo must be a path such as /ui/logs.' });
    if (returnTo.length > MAX_RETURN_TO || hasControlOrBackslash(returnTo)) throw bad();
    const base = new URL(this.#publicUrl === '' ? 'http://berth.invalid' : this.#publicUrl);
    let url: URL;
    try {
      url = new URL(returnTo, base);
    } catch {
      throw bad();
    }
    if (url.origin !== base.origin) throw bad();
    // A relative path must start with one slash (`//host` and `/\host` are other origins to a browser).
    if (!/^https?:\/\//i.test(returnTo) && (!returnTo.startsWith('/') || returnTo.startsWith('//'))) throw bad();
    return `${url.pathname}${url.search}${url.hash}`;
  }

  redirectUri(provider: ExternalProvider): string {
    return `${this.#publicUrl}/auth/callback/${provider}`;
  }

  /** Whether `provider` has an issuer configured here. */
  offers(provider: string): provider is ExternalProvider {
    return this.#issuers.has(provider as ExternalProvider);
  }

  #issuer(provider: ExternalProvider): OidcIssuer {
    const issuer = this.#issuers.get(provider);
    if (issuer === undefined) throw appError('auth:sign-in:provider-not-configured');
    return issuer;
  }
}

/** Browsers drop control characters and read `\\` as `/` in URLs: either could move a path to another origin. */
function hasControlOrBackslash(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c) return true;
  }
  return false;
}
