import type { Executor } from '../db.js';

/** A sign-in on its way through an issuer (migration 011). */
export interface SignInAttempt {
  provider: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
  organizationId: string | null;
  expiresAt: Date;
}

export async function insertAttempt(db: Executor, idHash: string, attempt: SignInAttempt): Promise<void> {
  await db
    .insertInto('sign_in_attempts')
    .values({
      id_hash: idHash,
      provider: attempt.provider,
      state: attempt.state,
      nonce: attempt.nonce,
      code_verifier: attempt.codeVerifier,
      return_to: attempt.returnTo,
      organization_id: attempt.organizationId,
      expires_at: attempt.expiresAt,
    })
    .execute();
}

/** Takes the attempt (it is deleted as it is read: a second callback with the same cookie finds nothing). */
export async function takeAttempt(db: Executor, idHash: string): Promise<SignInAttempt | undefined> {
  const row = await db
    .deleteFrom('sign_in_attempts')
    .where('id_hash', '=', idHash)
    .returning([
      'provider',
      'state',
      'nonce',
      'code_verifier as codeVerifier',
      'return_to as returnTo',
      'organization_id as organizationId',
      'expires_at as expiresAt',
    ])
    .executeTakeFirst();
  return row === undefined ? undefined : { ...row, expiresAt: new Date(row.expiresAt) };
}
