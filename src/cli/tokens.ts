import { generateKeyId, generateToken, hashToken } from '../core/tokens.js';
import type { Db } from '../store/db.js';
import { CliError } from './cli-error.js';

export async function createToken(
  db: Db,
  opts: { principal: string; organization?: string; expiresInDays?: number },
): Promise<{ keyId: string; token: string }> {
  const principal = await db.selectFrom('principals').select('id').where('id', '=', opts.principal).executeTakeFirst();
  if (principal === undefined) throw new CliError(`no principal '${opts.principal}'`);
  if (opts.organization !== undefined) {
    const org = await db
      .selectFrom('organizations')
      .select('id')
      .where('id', '=', opts.organization)
      .executeTakeFirst();
    if (org === undefined) throw new CliError(`no organization '${opts.organization}'`);
  }
  if (opts.expiresInDays !== undefined && !(Number.isInteger(opts.expiresInDays) && opts.expiresInDays > 0)) {
    throw new CliError('--expires-in-days must be a positive whole number');
  }
  const keyId = generateKeyId();
  const token = generateToken(keyId);
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      principal_id: opts.principal,
      organization_id: opts.organization ?? null,
      token_hash: hashToken(token),
      expires_at: opts.expiresInDays === undefined ? null : new Date(Date.now() + opts.expiresInDays * 86_400_000),
      revoked_at: null,
    })
    .execute();
  return { keyId, token };
}

export async function revokeToken(db: Db, keyId: string): Promise<void> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new CliError(`no key '${keyId}'`);
}
