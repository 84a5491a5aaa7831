import { Type } from '@sinclair/typebox';
import { EXTERNAL_PROVIDERS, type ExternalProvider, literalUnion } from '../enums.js';

const Text = (description: string) => Type.String({ minLength: 1, maxLength: 2048, description });

/** The file `SIGN_IN_CONFIG` names (YAML, or JSON which is YAML too). */
export const SignInFileSchema = Type.Object(
  {
    passwordSignIn: Type.Optional(
      Type.Boolean({ description: "Offer `EMAIL_PASSWORD`: Berth's own sign-in with an email and a password." }),
    ),
    providers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            provider: literalUnion(EXTERNAL_PROVIDERS, {
              description: 'The identity provider this issuer stands for.',
            }),
            issuer: Text(
              'The OpenID Connect issuer URL (its discovery document is `/.well-known/openid-configuration`).',
            ),
            clientId: Text("Berth's client id at the issuer."),
            clientSecret: Text("Berth's client secret at the issuer."),
            scopes: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }), {
                maxItems: 50,
                description: 'Scopes asked for; `openid` is always asked for. Default: `openid email profile`.',
              }),
            ),
            displayName: Type.Optional(
              Type.String({ minLength: 1, maxLength: 200, description: 'What the sign-in button says.' }),
            ),
            linkByVerifiedEmail: Type.Optional(
              Type.Boolean({
                description:
                  "Link a first sign-in whose verified email matches exactly one principal's (default false: only " +
                  'for an issuer that owns its users’ email domains).',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 5 },
      ),
    ),
  },
  { additionalProperties: false },
);

export interface OidcProviderSettings {
  provider: ExternalProvider;
  issuer: URL;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  displayName: string;
  linkByVerifiedEmail: boolean;
}

/** How people sign in to this deployment. */
export interface SignInSettings {
  passwordSignIn: boolean;
  providers: OidcProviderSettings[];
  /** The base URL people reach Berth at; empty until known when `PUBLIC_URL` is unset (the listening address). */
  publicUrl: string;
  sessionMaxAgeMs: number;
  sessionIdleMs: number;
}

export const DEFAULT_DISPLAY_NAMES: Record<ExternalProvider, string> = {
  CODE_HOST_1: 'Code host 1',
  CODE_HOST_2: 'Code host 2',
  SOCIAL_1: 'Social 1',
  WORKFORCE_1: 'Workforce 1',
  SSO_BROKER: 'SSO broker',
};

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An http issuer is for a provider on this machine (tests, a local IdP) only. */
export function isLoopback(url: URL): boolean {
  return LOOPBACK.has(url.hostname);
}
