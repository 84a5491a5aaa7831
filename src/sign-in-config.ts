import { readFileSync } from 'node:fs';
import type { Static } from '@sinclair/typebox';
import { parse as parseYaml } from 'yaml';
import type { Config } from './config.js';
import { ConfigError } from './config.js';
import {
  DEFAULT_DISPLAY_NAMES,
  isLoopback,
  type OidcProviderSettings,
  SignInFileSchema,
  type SignInSettings,
} from './core/schemas/sign-in-config.js';
import { describeValidationErrors, strictAjv } from './core/validation.js';

export type { OidcProviderSettings, SignInSettings };

const validateFile = strictAjv.compile<Static<typeof SignInFileSchema>>(SignInFileSchema);

/**
 * Reads `SIGN_IN_CONFIG` (when set) into the settings; `--demo` offers the password sign-in by default. A bad file
 * is a ConfigError naming the entry (`providers[1].issuer: …`), which stops the process at start.
 */
export function loadSignInSettings(config: Config, { demo = false }: { demo?: boolean } = {}): SignInSettings {
  const base = {
    publicUrl: config.PUBLIC_URL.replace(/\/+$/, ''),
    sessionMaxAgeMs: config.SESSION_MAX_AGE_MS,
    sessionIdleMs: config.SESSION_IDLE_MS,
  };
  if (config.SIGN_IN_CONFIG === '') return { ...base, passwordSignIn: demo, providers: [] };
  const path = config.SIGN_IN_CONFIG;
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`SIGN_IN_CONFIG ${path}: ${(error as Error).message}`);
  }
  return { ...base, ...parseSignInFile(raw ?? {}, path, demo) };
}

/** The file's content as settings, or a ConfigError naming each bad entry. */
export function parseSignInFile(
  raw: unknown,
  path: string,
  demo = false,
): Pick<SignInSettings, 'passwordSignIn' | 'providers'> {
  const fail = (lines: string[]) => {
    throw new ConfigError(`SIGN_IN_CONFIG ${path} is invalid:\n  ${lines.join('\n  ')}`);
  };
  if (!validateFile(raw)) fail(describeValidationErrors(validateFile.errors ?? [], 'file').items ?? ['file: invalid']);
  const file = raw as Static<typeof SignInFileSchema>;
  const problems: string[] = [];
  const seen = new Set<string>();
  const providers = (file.providers ?? []).map((entry, i): OidcProviderSettings => {
    const at = `providers[${i}]`;
    if (seen.has(entry.provider)) problems.push(`${at}.provider: ${entry.provider} is configured twice`);
    seen.add(entry.provider);
    let issuer: URL | undefined;
    try {
      issuer = new URL(entry.issuer);
    } catch {
      problems.push(`${at}.issuer: must be a URL (got ${JSON.stringify(entry.issuer)})`);
    }
    if (issuer !== undefined) {
      if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopback(issuer))) {
        problems.push(
          `${at}.issuer: must be https (http only for a loopback host) (got ${JSON.stringify(entry.issuer)})`,
        );
      }
      if (issuer.search !== '' || issuer.hash !== '' || issuer.username !== '' || issuer.password !== '') {
        problems.push(`${at}.issuer: must have no query, fragment or credentials`);
      }
    }
    const scopes = [...new Set(['openid', ...(entry.scopes ?? ['email', 'profile'])])];
    return {
      provider: entry.provider,
      issuer: issuer ?? new URL('https://invalid.invalid'),
      clientId: entry.clientId,
      clientSecret: entry.clientSecret,
      scopes,
      displayName: entry.displayName ?? DEFAULT_DISPLAY_NAMES[entry.provider],
      linkByVerifiedEmail: entry.linkByVerifiedEmail ?? false,
    };
  });
  if (problems.length > 0) fail(problems);
  return { passwordSignIn: file.passwordSignIn ?? demo, providers };
}

/** The settings of a process that offers no sign-in but the demo's (tests, `createServices` without settings). */
export function noSignIn(config: Config): SignInSettings {
  return {
    passwordSignIn: false,
    providers: [],
    publicUrl: config.PUBLIC_URL.replace(/\/+$/, ''),
    sessionMaxAgeMs: config.SESSION_MAX_AGE_MS,
    sessionIdleMs: config.SESSION_IDLE_MS,
  };
}
