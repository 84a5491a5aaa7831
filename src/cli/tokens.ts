import { generateKeyId, generateToken, hashToken } from '../core/tokens.js';
import type { Db } from '../store/db.js';
import { insertApiKey, organizationExists, principalExists, revokeApiKey } from '../store/repositories/api-keys.js';
import { CliError } from './cli-error.js';
import { postJson, type ServerTarget, serverToken } from './server-client.js';

export interface TokenCreateOptions {
  principal?: string;
  organization?: string;
  name?: string;
  expiresInDays?: number;
  url?: string;
  token?: string;
}

/** The operator's way in (no server, no caller): any principal, scoped to an organization or not. */
export async function createToken(
  db: Db,
  opts: { principal: string; organization?: string; expiresInDays?: number },
): Promise<{ keyId: string; token: string }> {
  if (!(await principalExists(db, opts.principal))) throw new CliError(`no principal '${opts.principal}'`);
  if (opts.organization !== undefined && !(await organizationExists(db, opts.organization))) {
    throw new CliError(`no organization '${opts.organization}'`);
  }
  if (opts.expiresInDays !== undefined && !(Number.isInteger(opts.expiresInDays) && opts.expiresInDays > 0)) {
    throw new CliError('--expires-in-days must be a positive whole number');
  }
  const keyId = generateKeyId();
  const token = generateToken(keyId);
  await insertApiKey(db, {
    id: keyId,
    principalId: opts.principal,
    organizationId: opts.organization ?? null,
    tokenHash: hashToken(token),
    expiresAt: opts.expiresInDays === undefined ? null : new Date(Date.now() + opts.expiresInDays * 86_400_000),
  });
  return { keyId, token };
}

/** Revoking a revoked key succeeds and keeps its first revocation, as through the API. */
export async function revokeToken(db: Db, keyId: string): Promise<void> {
  if ((await revokeApiKey(db, keyId, new Date())) === 'missing') throw new CliError(`no key '${keyId}'`);
}

/**
 * Through a running server: the API's own create, as the caller of --token, so its rules apply (an admin or owner
 * of the organization, a principal no higher than the caller).
 */
export async function createTokenThroughServer(
  server: ServerTarget,
  opts: TokenCreateOptions,
): Promise<{ keyId: string; token: string }> {
  if (opts.organization === undefined) {
    throw new CliError(`--organization is required to create a key through the server at ${server.url}`);
  }
  if (opts.expiresInDays !== undefined && !(Number.isInteger(opts.expiresInDays) && opts.expiresInDays > 0)) {
    throw new CliError('--expires-in-days must be a positive whole number');
  }
  const bearer = serverToken(server, opts.token, 'an admin or owner of the organization');
  const body = {
    ...(opts.principal === undefined ? {} : { principalId: opts.principal }),
    ...(opts.name === undefined ? {} : { name: opts.name }),
    ...(opts.expiresInDays === undefined ? {} : { expiresInDays: opts.expiresInDays }),
  };
  const path = `/organizations/${encodeURIComponent(opts.organization)}/api-keys`;
  const answer = (await postJson(server.url, path, bearer, { data: body }, 201)) as {
    data: { id: string; token: string };
  };
  return { keyId: answer.data.id, token: answer.data.token };
}
