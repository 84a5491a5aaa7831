import * as oidc from 'openid-client';
import { isLoopback, type OidcProviderSettings } from '../../core/schemas/sign-in-config.js';

/** How long one call to an issuer (discovery, token endpoint, its keys) may take. */
const ISSUER_TIMEOUT_MS = 10_000;
/** A failed discovery is tried again on the next sign-in after this long, not on every one. */
const DISCOVERY_RETRY_MS = 5_000;

/** What Berth keeps between the redirect to the issuer and the callback. */
export interface AuthorizationRequest {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Who the issuer says signed in, from its ID token (already validated). */
export interface IssuerIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
}

/**
 * One OpenID Connect issuer, driven by `openid-client` (certified): discovery, PKCE (S256), state, nonce, the code
 * exchange and every check of the ID token (signature, issuer, audience, expiry, nonce) are the library's. Nothing
 * here parses a token.
 */
export class OidcIssuer {
  #config: Promise<oidc.Configuration> | undefined;
  #failedAt = 0;

  constructor(readonly settings: OidcProviderSettings) {}

  async authorizationRequest(redirectUri: string): Promise<AuthorizationRequest> {
    const config = await this.#configuration();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes.join(' '),
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, state, nonce, codeVerifier };
  }

  /**
   * Completes a sign-in from the callback's URL: the library checks `state`, exchanges the code with the PKCE
   * verifier, and validates the ID token against `nonce`. Any failure throws.
   */
  async complete(
    callbackUrl: URL,
    expected: { state: string; nonce: string; codeVerifier: string },
  ): Promise<IssuerIdentity> {
    const config = await this.#configuration();
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      expectedState: expected.state,
      expectedNonce: expected.nonce,
      pkceCodeVerifier: expected.codeVerifier,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (claims === undefined) throw new Error('the issuer sent no ID token');
    let email: unknown = claims.email;
    let verified: unknown = claims.email_verified;
    // Many issuers put scope claims in the userinfo answer only (OpenID Connect Core 5.4): ask it, for this subject.
    if (email === undefined && config.serverMetadata().userinfo_endpoint !== undefined) {
      try {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        email = info.email;
        verified = info.email_verified;
      } catch {
        // No email then: the identity can still be one already linked.
      }
    }
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof email === 'string' ? email : null,
      emailVerified: verified === true,
    };
  }

  #configuration(): Promise<oidc.Configuration> {
    if (this.#config !== undefined) return this.#config;
    if (Date.now() - this.#failedAt < DISCOVERY_RETRY_MS) {
      return Promise.reject(new Error(`discovery of ${this.settings.issuer.href} failed recently`));
    }
    const { issuer, clientId, clientSecret } = this.settings;
    const discovering = oidc
      .discovery(issuer, clientId, { client_secret: clientSecret }, oidc.ClientSecretBasic(clientSecret), {
        timeout: ISSUER_TIMEOUT_MS / 1000,
        // http is allowed for an issuer on this machine only (sign-in-config.ts refuses any other).
        ...(issuer.protocol === 'http:' && isLoopback(issuer) ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      .then((config) => {
        config.timeout = ISSUER_TIMEOUT_MS / 1000;
        return config;
      });
    this.#config = discovering;
    discovering.catch(() => {
      if (this.#config === discovering) this.#config = undefined;
      this.#failedAt = Date.now();
    });
    return discovering;
  }
}
