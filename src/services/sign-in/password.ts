import PQueue from 'p-queue';
import { addressKey } from '../../core/client-address.js';
import { appError } from '../../core/errors.js';
import { verifyPassword } from '../../core/password-hash.js';
import { WindowCounter } from '../../core/window-counter.js';
import type { Db } from '../../store/db.js';
import { findPasswordCredential } from '../../store/sign-in/identities.js';

export interface PasswordLimits {
  /** Hashes computed at once (PASSWORD_HASH_CONCURRENCY). */
  hashConcurrency: number;
  /** Attempts per client address per window (SIGN_IN_MAX_PER_ADDRESS). */
  maxPerAddress: number;
  /** Failures per email per window (PASSWORD_FAILURES_PER_ACCOUNT). */
  failuresPerAccount: number;
  windowMs: number;
}

/** Hashes that may wait for a slot per slot; past it a sign-in is refused with 429 at once. */
const QUEUE_PER_SLOT = 8;

/** The one answer of every failed password sign-in, whatever the cause. */
export const signInFailed = () =>
  appError('auth:sign-in:failed', { description: 'The email or the password is wrong.' });

/**
 * Berth's own password sign-in. An unknown email costs the same hash as a wrong password and earns the same
 * answer; both count against the email's failures and the address's attempts. Hashes are memory-hard work anyone
 * can ask for, so at most `hashConcurrency` run at once and a short queue waits; beyond, 429.
 */
export class PasswordSignIn {
  readonly #hashes: PQueue;
  readonly #addresses: WindowCounter;
  readonly #failures: WindowCounter;

  constructor(
    private readonly db: Db,
    private readonly limits: PasswordLimits,
  ) {
    this.#hashes = new PQueue({ concurrency: limits.hashConcurrency });
    this.#addresses = new WindowCounter(limits.windowMs);
    this.#failures = new WindowCounter(limits.windowMs);
  }

  /** The principal `email` and `password` name, or `auth:sign-in:failed` / 429. */
  async check(email: string, password: string, address: string): Promise<string> {
    const account = email.trim().toLowerCase();
    const from = addressKey(address);
    if (this.#addresses.add(from) > this.limits.maxPerAddress) throw rateLimited(this.#addresses.remainingMs(from));
    if (this.#failures.count(account) >= this.limits.failuresPerAccount) {
      throw rateLimited(this.#failures.remainingMs(account));
    }
    if (this.#hashes.size >= this.limits.hashConcurrency * QUEUE_PER_SLOT) throw rateLimited(1_000);
    const credential = await findPasswordCredential(this.db, account);
    const matches = await this.#hashes.add(() => verifyPassword(password, credential?.passwordHash));
    if (credential === undefined || matches !== true) {
      this.#failures.add(account);
      throw signInFailed();
    }
    this.#failures.delete(account);
    return credential.principalId;
  }

  /** Hashes running and waiting (metrics, tests). */
  get hashing(): { running: number; waiting: number } {
    return { running: this.#hashes.pending, waiting: this.#hashes.size };
  }
}

function rateLimited(ms: number) {
  return appError('http:request:rate-limited', {
    description: 'Too many sign-in attempts. Retry later.',
    headers: { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) },
  });
}
