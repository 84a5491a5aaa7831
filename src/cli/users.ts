import { hashPassword } from '../core/password-hash.js';
import type { Db } from '../store/db.js';
import { findPasswordCredential, setPasswordHash } from '../store/sign-in/identities.js';
import { deleteSessionsOf } from '../store/sign-in/sessions.js';
import { CliError } from './cli-error.js';

/** The shortest password `berth user set-password` accepts. */
export const MIN_PASSWORD_LENGTH = 12;

/**
 * Sets a principal's password (stored as its scrypt hash) and ends the sessions it signed in with a password, on
 * every replica at once (their caches hear of the delete). Returns how many sessions ended.
 */
export async function setPassword(
  db: Db,
  who: { principal?: string; email?: string },
  password: string,
): Promise<{ principalId: string; sessionsEnded: number }> {
  if ((who.principal === undefined) === (who.email === undefined)) {
    throw new CliError('name the principal with exactly one of --principal and --email');
  }
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new CliError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const principalId = who.principal ?? (await findPasswordCredential(db, who.email!))?.principalId;
  if (principalId === undefined) throw new CliError(`no principal has the email ${who.email}`);
  const hash = await hashPassword(password);
  return db.transaction().execute(async (trx) => {
    if (!(await setPasswordHash(trx, principalId, hash))) throw new CliError(`no principal ${principalId}`);
    const sessionsEnded = await deleteSessionsOf(trx, principalId, 'EMAIL_PASSWORD');
    return { principalId, sessionsEnded };
  });
}

/** The first line of standard input (the password, piped so it stays out of the shell's history). */
export async function readFirstLine(input: NodeJS.ReadableStream = process.stdin): Promise<string> {
  let text = '';
  for await (const chunk of input) {
    text += chunk.toString();
    if (text.includes('\n') || text.length > 4096) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}
