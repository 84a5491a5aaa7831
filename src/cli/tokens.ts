import { generateKeyId, generateToken, hashToken } from '../core/tokens.js';
import type { Db } from '../store/db.js';
import { insertApiKey, organizationExists, principalExists, revokeApiKey } from '../store/repositories/api-keys.js';
import { CliError } from './cli-error.js';

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
