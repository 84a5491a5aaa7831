import type { CloudAccount } from '../../../core/log-query/types.js';
import type { HistoryCursor, StreamEvent, StreamQuery, StreamSource, TailStep } from '../../log-stream/port.js';
import type { RateLimiter } from '../quotas.js';
import { FilterLogEventsClient, type FilterLogEventsOptions, scanTargets } from './client.js';
import { type AwsCursor, type AwsWireCursor, compactCursor, restoreCursor } from './cursor.js';
import { mergeHistory } from './history-merge.js';
import { awsLiveTail } from './live.js';
import { advanceCursor, readTail, type TailBatch } from './tail-read.js';

export interface AwsStreamOptions extends FilterLogEventsOptions {
  /** How far before the newest read the tail reads again, for events ingested late (CloudWatch agents batch for seconds). */
  lookbackMs: number;
  /** FilterLogEvents pages one tail read may take per log group (the rest waits for the next read). */
  maxPagesPerRead: number;
  now?: () => number;
}

export const AWS_STREAM_DEFAULTS: Omit<AwsStreamOptions, 'aws'> = {
  requestsPerSecond: 5,
  burst: 1,
  lookbackMs: 5_000,
  maxPagesPerRead: 10,
};

/**
 * Log stream source for `aws` accounts: FilterLogEvents for history and for
 * a polled tail (see docs/decisions.md, "Log stream on aws"). The filter
 * pattern goes upstream unchanged; CloudWatch's own matching is authoritative.
 * A log group that does not exist reads as empty, as on `local`. Where the
 * replica follows keys cluster-wide, the tail is fed live (`tailing`, live.ts).
 */
export class AwsStreamSource implements StreamSource<AwsCursor, TailBatch> {
  private readonly options: AwsStreamOptions;
  private readonly client: FilterLogEventsClient;
  readonly tailing = awsLiveTail;
  private readonly now: () => number;

  constructor(options: Partial<AwsStreamOptions> & Pick<AwsStreamOptions, 'aws'>) {
    this.options = { ...AWS_STREAM_DEFAULTS, ...options };
    this.now = this.options.now ?? (() => Date.now());
    this.client = new FilterLogEventsClient(this.options);
  }

  /** The rate limiter of one account and region (shared by history and tail, and by every retry). */
  limiter(account: CloudAccount, region: string): RateLimiter {
    return this.client.limiter(account, region);
  }

  async tailStart(): Promise<AwsCursor> {
    // The switch point lies one lookback back: an event written just before the stream opened but
    // ingested after history read its millisecond is still delivered, by the tail.
    return { ts: Math.max(0, this.now() - this.options.lookbackMs), seen: [] };
  }

  history(
    q: StreamQuery,
    window: { startMs: number; endMs: number },
    after: HistoryCursor | undefined,
    switchPoint: AwsCursor | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]> {
    const startTime = Math.max(0, window.startMs, after?.ts ?? 0);
    const last = Math.min(window.endMs, switchPoint === undefined ? Number.MAX_SAFE_INTEGER : switchPoint.ts - 1);
    return mergeHistory(this.client.pagesOf(q), scanTargets(q), { startTime, last, after }, batchSize, signal);
  }

  /**
   * One sweep per log group (per ≤ 100 stream names) from the oldest cursor to now, at most
   * `maxPagesPerRead` pages each, shared by every subscriber of the query.
   */
  async read(q: StreamQuery, cursors: AwsCursor[], signal: AbortSignal): Promise<TailBatch> {
    const to = this.now();
    return readTail(this.client.pagesOf(q), scanTargets(q), cursors, to, this.options.maxPagesPerRead, signal);
  }

  /** The events of a read past `cursor`, at most `limit` of them (see `advanceCursor`). */
  advance(
    cursor: AwsCursor,
    batch: TailBatch,
    startMs: number,
    limit = Number.POSITIVE_INFINITY,
  ): TailStep<AwsCursor> & { more: boolean } {
    return advanceCursor(cursor, batch, startMs, limit, this.options.lookbackMs);
  }

  /** The resume point of a cursor for an SSE id (see `compactCursor`). */
  compact(cursor: AwsCursor): AwsWireCursor {
    return compactCursor(cursor);
  }

  restore(value: unknown): AwsCursor | undefined {
    return restoreCursor(value);
  }
}
