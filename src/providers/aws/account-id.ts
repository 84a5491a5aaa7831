import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { LRUCache } from 'lru-cache';
import { linkSignals } from '../../core/abort.js';
import { type AwsAccount, type AwsClients, accountKey } from './clients.js';

const MAX_ENTRIES = 500;
/** How long `getOr` answers its fallback after STS failed, before it asks again. */
const FAILURE_TTL_MS = 60_000;

/** Resolves when `work` does, or rejects with the signal's reason once it aborts (the work itself goes on). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The 12-digit AWS account id behind a cloud account's credentials (STS GetCallerIdentity, through the account's
 * own endpoint and role), which log group ARNs need. Cached per account settings: an account whose role, external
 * id, region or endpoint changes is asked again. Concurrent first calls share one request; a failure is not kept.
 */
export class AwsAccountIds {
  private readonly known = new LRUCache<string, string>({ max: MAX_ENTRIES });
  private readonly pending = new Map<string, Promise<string>>();
  private readonly failed = new LRUCache<string, number>({ max: MAX_ENTRIES });

  constructor(private readonly clients: Pick<AwsClients, 'sts' | 'callTimeoutMs'>) {}

  /** `signal` ends this caller's wait; a request shared with other callers still runs (bounded by its time limit). */
  get(account: AwsAccount, signal?: AbortSignal): Promise<string> {
    const key = accountKey(account);
    const known = this.known.get(key);
    if (known !== undefined) return Promise.resolve(known);
    let request = this.pending.get(key);
    if (request === undefined) {
      const asked = this.ask(account);
      request = asked;
      this.pending.set(key, asked);
      asked
        .then(
          (id) => void this.known.set(key, id),
          () => undefined,
        )
        .finally(() => {
          if (this.pending.get(key) === asked) this.pending.delete(key);
        });
    }
    return untilAborted(request, signal);
  }

  /**
   * The account id, or `fallback` when STS cannot say (an AWS-compatible endpoint without STS); a failure is then
   * remembered for FAILURE_TTL_MS, so callers on a hot path (every FilterLogEvents call) do not each wait for it.
   */
  async getOr(account: AwsAccount, fallback: string, signal?: AbortSignal): Promise<string> {
    const key = accountKey(account);
    const failedAt = this.failed.get(key);
    if (failedAt !== undefined && Date.now() - failedAt < FAILURE_TTL_MS) return fallback;
    try {
      return await this.get(account, signal);
    } catch (error) {
      if (signal?.aborted) throw error;
      this.failed.set(key, Date.now());
      return fallback;
    }
  }

  private async ask(account: AwsAccount): Promise<string> {
    const call = linkSignals([], this.clients.callTimeoutMs, 'AWS GetCallerIdentity');
    try {
      const out = await this.clients.sts(account).send(new GetCallerIdentityCommand({}), { abortSignal: call.signal });
      const id: unknown = out.Account;
      if (typeof id !== 'string' || !/^\d{12}$/.test(id)) {
        throw new Error(`STS GetCallerIdentity answered no account id: ${JSON.stringify(id)}`);
      }
      return id;
    } finally {
      call.dispose();
    }
  }
}
