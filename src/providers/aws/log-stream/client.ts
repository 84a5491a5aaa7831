import { FilterLogEventsCommand, type FilterLogEventsCommandInput } from '@aws-sdk/client-cloudwatch-logs';
import { linkSignals } from '../../../core/abort.js';
import type { CloudAccount } from '../../../core/log-query/types.js';
import type { StreamEvent, StreamQuery } from '../../log-stream/port.js';
import type { AwsClients } from '../clients.js';
import type { AwsQuotas, RateLimiter } from '../quotas.js';
import { TokenBucket } from '../token-bucket.js';
import { toStreamEvent } from './events.js';

/** AWS allows at most 100 `logStreamNames` per FilterLogEvents call. */
const MAX_NAMES_PER_CALL = 100;

/** One FilterLogEvents scan target: a log group and at most 100 stream names, or a prefix, or every stream. */
export interface ScanTarget {
  group: string;
  streams: Pick<FilterLogEventsCommandInput, 'logStreamNamePrefix' | 'logStreamNames'>;
}

/** The scan targets of a query: one per log group (per ≤ 100 stream names). */
export function scanTargets(q: StreamQuery): ScanTarget[] {
  const targets: ScanTarget[] = [];
  for (const group of q.logGroups) {
    const s = q.streams;
    if (s.kind === 'names') {
      const names = [...new Set(s.names)];
      for (let i = 0; i < names.length; i += MAX_NAMES_PER_CALL) {
        targets.push({ group, streams: { logStreamNames: names.slice(i, i + MAX_NAMES_PER_CALL) } });
      }
    } else if (s.kind === 'prefix' && s.prefix !== '') {
      targets.push({ group, streams: { logStreamNamePrefix: s.prefix } });
    } else {
      targets.push({ group, streams: {} });
    }
  }
  return targets;
}

/** One FilterLogEvents page: its events, and the token of the next page when there is one. */
export interface Page {
  events: StreamEvent[];
  nextToken?: string;
}

/** Reads one FilterLogEvents page of a scan target in a time range (from the token of the page before). */
export type PageReader = (
  target: ScanTarget,
  range: { startTime: number; endTime?: number },
  nextToken: string | undefined,
  signal: AbortSignal,
) => Promise<Page>;

export interface FilterLogEventsOptions {
  /** FilterLogEvents calls per second per account and region (AWS: 5, not adjustable). */
  requestsPerSecond: number;
  /**
   * Token bucket size. 1 (the default) spaces calls evenly, so no rolling second ever holds more than
   * `requestsPerSecond`; a larger bucket lowers latency after a quiet spell but can exceed it briefly.
   */
  burst: number;
  /** FilterLogEvents `limit` (events per page, AWS max 10,000); unset: AWS's own (10,000 or 1 MB). */
  pageLimit?: number;
  /** The AWS quotas held cluster-wide (FilterLogEvents per AWS account and region); unset: a bucket per process. */
  quotas?: Pick<AwsQuotas, 'filterLogEvents'>;
  /** The process's client factory, and the time limit of one call. */
  aws: Pick<AwsClients, 'cloudWatchLogs' | 'callTimeoutMs'>;
}

const isNotFound = (error: unknown) => (error as { name?: unknown } | null)?.name === 'ResourceNotFoundException';

/**
 * FilterLogEvents pages with each account's rate limit (shared by history and tail, and by every retry). A log
 * group that does not exist reads as empty, as on `local`.
 */
export class FilterLogEventsClient {
  private readonly limiters = new Map<string, RateLimiter>();

  constructor(private readonly options: FilterLogEventsOptions) {}

  /** The rate limiter of one account and region (shared by history and tail, and by every retry). */
  limiter(account: CloudAccount, region: string): RateLimiter {
    const key = `${account.id}\u0000${region}`;
    let limiter = this.limiters.get(key);
    if (limiter === undefined) {
      // Cluster-wide and by AWS account when the quotas are wired (every replica, every cloud account of one AWS
      // account); otherwise this process's own bucket.
      limiter =
        this.options.quotas?.filterLogEvents(account, region) ??
        new TokenBucket(this.options.requestsPerSecond, this.options.burst);
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  /**
   * FilterLogEvents with the account's rate limit. The client is the one the factory shares with Insights; the limit
   * rides on the command, after the retry middleware so every attempt (a throttled retry too) takes a token, and
   * before signing so the signature is fresh.
   */
  private command(account: CloudAccount, region: string, input: FilterLogEventsCommandInput) {
    const limiter = this.limiter(account, region);
    const command = new FilterLogEventsCommand(input);
    const rateLimit =
      (next: (args: unknown) => Promise<unknown>, context: { __smithy_context?: { abortSignal?: AbortSignal } }) =>
      async (args: unknown) => {
        await limiter.take(context.__smithy_context?.abortSignal);
        return next(args);
      };
    command.middlewareStack.addRelativeTo(
      rateLimit as unknown as Parameters<typeof command.middlewareStack.addRelativeTo>[0],
      { relation: 'after', toMiddleware: 'retryMiddleware', name: 'berthFilterLogEventsRateLimit' },
    );
    return { client: this.options.aws.cloudWatchLogs(account, region), command };
  }

  /** One FilterLogEvents page of the query's `target`. */
  async page(
    q: StreamQuery,
    target: ScanTarget,
    range: { startTime: number; endTime?: number },
    nextToken: string | undefined,
    signal: AbortSignal,
  ): Promise<Page> {
    const input: FilterLogEventsCommandInput = {
      ...(target.group.startsWith('arn:') ? { logGroupIdentifier: target.group } : { logGroupName: target.group }),
      ...target.streams,
      // AWS ignores it and always interleaves; AWS-compatible endpoints that honour it would otherwise return a
      // group's events stream by stream, and the merge (which takes pages as oldest first) would drop some.
      interleaved: true,
      startTime: range.startTime,
      ...(range.endTime === undefined ? {} : { endTime: range.endTime }),
      ...(q.pattern.trim() === '' ? {} : { filterPattern: q.pattern }),
      ...(nextToken === undefined ? {} : { nextToken }),
      ...(this.options.pageLimit === undefined ? {} : { limit: this.options.pageLimit }),
    };
    // One call, its retries included, is bounded like every AWS call (AWS_CALL_TIMEOUT_MS): an endpoint that never
    // answers ends the stream with an error instead of holding it, and every tail sharing its poller, forever.
    const call = linkSignals([signal], this.options.aws.callTimeoutMs, `AWS FilterLogEvents`);
    try {
      const { client, command } = this.command(q.account, q.region, input);
      const out = await client.send(command, { abortSignal: call.signal });
      const events = (out.events ?? []).map((e) => toStreamEvent(e, target.group));
      return out.nextToken ? { events, nextToken: out.nextToken } : { events };
    } catch (error) {
      if (isNotFound(error) && !signal.aborted) return { events: [] };
      throw error;
    } finally {
      call.dispose();
    }
  }

  /** The page reader of one query. */
  pagesOf(q: StreamQuery): PageReader {
    return (target, range, nextToken, signal) => this.page(q, target, range, nextToken, signal);
  }
}
