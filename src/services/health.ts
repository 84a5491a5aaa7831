import type { Store } from '../store/db.js';

/** Readiness: whether this replica can serve, as far as its own database tells. */
export class HealthService {
  constructor(private readonly store: Pick<Store, 'ping'>) {}

  /** Resolves once the database answers a ping; rejects when it does not within `timeoutMs` (or is down). */
  ready(timeoutMs: number): Promise<void> {
    return this.store.ping(timeoutMs);
  }
}
