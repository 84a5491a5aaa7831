import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { loadSignInSettings, parseSignInFile } from '../../src/sign-in-config.js';

const entry = (over: Record<string, unknown> = {}) => ({
  provider: 'WORKFORCE_1',
  issuer: 'https://login.example.com',
  clientId: 'berth',
  clientSecret: 'secret',
  ...over,
});

const problemsOf = (raw: unknown): string => {
  try {
    parseSignInFile(raw, 'sign-in.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('SIGN_IN_CONFIG', () => {
  it('reads providers with their defaults, and passwordSignIn', () => {
    const file = parseSignInFile({ passwordSignIn: true, providers: [entry({ displayName: 'Example' })] }, 'f');
    expect(file.passwordSignIn).toBe(true);
    expect(file.providers).toEqual([
      {
        provider: 'WORKFORCE_1',
        issuer: new URL('https://login.example.com'),
        clientId: 'berth',
        clientSecret: 'secret',
        scopes: ['openid', 'email', 'profile'],
        displayName: 'Example',
        linkByVerifiedEmail: false,
      },
    ]);
    expect(parseSignInFile({ providers: [entry({ scopes: ['groups'] })] }, 'f').providers[0]!.scopes).toEqual([
      'openid',
      'groups',
    ]);
  });

  it('names the entry of every problem', () => {
    expect(problemsOf({ providers: [entry(), entry({ provider: 'EMAIL_PASSWORD' })] })).toContain(
      'providers[1].provider: must be one of',
    );
    expect(problemsOf({ providers: [entry({ clientSecret: undefined })] })).toContain(
      'providers[0].clientSecret: is required',
    );
    expect(problemsOf({ providers: [entry({ issuer: 'http://login.example.com' })] })).toContain(
      'providers[0].issuer: must be https',
    );
    expect(problemsOf({ providers: [entry({ issuer: 'not a url' })] })).toContain('providers[0].issuer: must be a URL');
    expect(problemsOf({ providers: [entry(), entry()] })).toContain(
      'providers[1].provider: WORKFORCE_1 is configured twice',
    );
    expect(problemsOf({ providers: [entry({ extra: 1 })] })).toContain('providers[0].extra: is not allowed');
    expect(problemsOf({ passwordSignIn: 'yes' })).toContain('passwordSignIn: must be a boolean');
  });

  it('accepts http for an issuer on a loopback host only', () => {
    for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realm', 'http://[::1]:9000']) {
      expect(parseSignInFile({ providers: [entry({ issuer })] }, 'f').providers[0]!.issuer.href).toContain(':9000');
    }
  });

  it('offers the password sign-in by default with --demo only', () => {
    const config = loadConfig({});
    expect(loadSignInSettings(config).passwordSignIn).toBe(false);
    expect(loadSignInSettings(config, { demo: true }).passwordSignIn).toBe(true);
  });

  it('reads the YAML file SIGN_IN_CONFIG names, and refuses an unreadable one naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-sign-in-'));
    const path = join(dir, 'sign-in.yaml');
    writeFileSync(
      path,
      'passwordSignIn: true\nproviders:\n  - provider: SOCIAL_1\n    issuer: https://social.example\n    clientId: c\n    clientSecret: s\n',
    );
    const settings = loadSignInSettings(loadConfig({ SIGN_IN_CONFIG: path, PUBLIC_URL: 'https://berth.example.com/' }));
    expect(settings.passwordSignIn).toBe(true);
    expect(settings.providers.map((p) => p.provider)).toEqual(['SOCIAL_1']);
    expect(settings.publicUrl).toBe('https://berth.example.com');
    expect(() => loadSignInSettings(loadConfig({ SIGN_IN_CONFIG: join(dir, 'missing.yaml') }))).toThrow(
      /missing\.yaml/,
    );
    writeFileSync(path, 'providers: [');
    expect(() => loadSignInSettings(loadConfig({ SIGN_IN_CONFIG: path }))).toThrow(ConfigError);
  });

  it('refuses a PUBLIC_URL that is not a bare http(s) origin', () => {
    expect(() => loadConfig({ PUBLIC_URL: 'berth.example.com' })).toThrow(/PUBLIC_URL/);
    expect(() => loadConfig({ PUBLIC_URL: 'https://berth.example.com/?x=1' })).toThrow(/PUBLIC_URL/);
  });
});
