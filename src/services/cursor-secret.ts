import { randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { storedCursorSecret } from '../store/repositories/cursor-secret.js';

/**
 * The key that seals domain-list and API-key-list cursors: `CURSOR_SECRET` when set, else 32 random bytes generated
 * by the first replica to start and kept in the database (migration 010), so every replica and restart agrees
 * without configuration. There is no key in the source. Read once per process: the server loads it at start
 * (`startServer`), before it listens; a process that did not (a test's services) loads it on first use. A failed
 * read is not remembered: the next use reads again.
 */
export class CursorSecret {
  private loading: Promise<string> | undefined;

  constructor(
    private readonly db: Db,
    /** `config.CURSOR_SECRET`; empty: the stored one. */
    private readonly configured: string,
  ) {}

  get(): Promise<string> {
    if (this.configured !== '') return Promise.resolve(this.configured);
    this.loading ??= storedCursorSecret(this.db, randomBytes(32).toString('base64url')).catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }
}
