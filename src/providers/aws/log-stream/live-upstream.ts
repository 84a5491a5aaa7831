import { setTimeout as sleep } from 'node:timers/promises';
import { linkSignals } from '../../../core/abort.js';
import { type BackoffPolicy, backoffDelay } from '../../../core/backoff.js';
import type { CloudAccount } from '../../../core/log-query/types.js';
import type { Logger } from '../../../core/logger.js';
import type { RawTailEvent, TailEvent, TailWindow } from '../../../core/tail-window.js';
import type { StreamQuery } from '../../log-stream/port.js';
import type { AwsClients } from '../clients.js';
import { LiveTailEndedError, type LiveTailMessage, LiveTailRefusedError, liveTail, logGroupArn } from './live-tail.js';
import type { AwsStreamSource } from './index.js';

/** Where the holder of a key sends what it reads (the cluster's bus, through the replica's own window). */
export interface UpstreamSink {
  /** Events new to the window (already in it), and how far the upstream has answered. */
  publish(events: TailEvent[], coveredTo: number): Promise<void>;
  /**
   * A seam could not be filled (`gap`: the subscribers end with `logs:stream:gap` and resume with their
   * Last-Event-ID), or the upstream failed for good (`failed`: they end with `logs:upstream:failed`).
   */
  fail(kind: 'gap' | 'failed', error: unknown): Promise<void>;
  /** How it reads from now on: a Live Tail session, or polling FilterLogEvents (`fallback`: why Live Tail was refused). */
  mode(mode: 'live' | 'poll', fallback?: string): void;
}

export interface LiveUpstreamOptions {
  /** FilterLogEvents reads for the seams and the polling fallback (rate-limited per AWS account and region). */
  source: Pick<AwsStreamSource, 'read'>;
  clients: Pick<AwsClients, 'cloudWatchLogs'>;
  /** The AWS account id of a cloud account (log group ARNs need it). */
  accountId(account: CloudAccount, signal: AbortSignal): Promise<string>;
  /** Time limit on opening a session (until its first frame): the limit of every AWS call. */
  openTimeoutMs: number;
  /** False: poll FilterLogEvents only (AWS_LIVE_TAIL=off). */
  liveTail: boolean;
  /** Late ingestion the tail still delivers: seams are filled from this far back. */
  lookbackMs: number;
  /** Polling fallback: one read per interval. */
  pollIntervalMs: number;
  /** The first fill of a key reaches this much further back, so streams that began just before are covered. */
  warmupMs: number;
  /** Live Tail sessions of one account and region (the quota, cluster-wide); resolves with the release. */
  sessionSlot?: (query: StreamQuery, sessions: number, signal: AbortSignal) => Promise<() => void>;
  log?: Logger;
  now?: () => number;
}

/** Log groups per StartLiveTail session (AWS). */
const GROUPS_PER_SESSION = 10;
/** A seam's fill after a sampled update reaches back this much more than the update interval (AWS: 1 s). */
const UPDATE_SPAN_MS = 2_000;
/** Reconnects that keep failing (a renewal or a seam does not count). */
const RECONNECT_BACKOFF: BackoffPolicy = { baseMs: 250, maxMs: 10_000, jitter: 'equal' };
/** Sessions in a row that end before they start, after which a key polls instead (the endpoint cannot do it). */
const MAX_UNOPENED = 2;
/** How long a key waits for free Live Tail sessions of its AWS account before it polls instead. */
const SESSION_SLOT_WAIT_MS = 2_000;
/** Fills after sampled updates are at most this often (FilterLogEvents: 5 calls/s per account and region). */
const SAMPLED_FILL_EVERY_MS = 1_000;

/** A seam whose FilterLogEvents fill could not read everything (more pages than a read may take). */
export class TailGapError extends Error {
  override name = 'TailGapError';
}

/**
 * The upstream of one tail key, run by the replica that holds its lease: a Live Tail session (several for more
 * than 10 groups, merged) with every seam filled from FilterLogEvents — the start, a renewal, a reconnect, a
 * sampled update — or, where Live Tail is refused, polling FilterLogEvents. Everything goes through the
 * replica's window, which gives each event its id once (see core/tail-window.ts), then to the sink.
 */
export class AwsLiveUpstream {
  private readonly now: () => number;

  constructor(private readonly options: LiveUpstreamOptions) {
    this.now = options.now ?? (() => Date.now());
  }

  /** Runs until `signal` aborts (the lease was lost or released) or the upstream failed for good. */
  async run(query: StreamQuery, window: TailWindow, sink: UpstreamSink, signal: AbortSignal): Promise<void> {
    let live = this.options.liveTail;
    sink.mode(live ? 'live' : 'poll');
    /** Reconnects in a row that failed. */
    let failures = 0;
    /** Sessions in a row that ended before they started (an endpoint that does not really speak Live Tail). */
    let unopened = 0;
    while (!signal.aborted) {
      let opened = false;
      try {
        if (live) await this.liveRound(query, window, sink, signal, () => (opened = true));
        else await this.pollRound(query, window, sink, signal);
        failures = 0;
      } catch (failure) {
        if (signal.aborted) return;
        let error = failure;
        if (error instanceof LiveTailEndedError) unopened = opened ? 0 : unopened + 1;
        if (error instanceof LiveTailEndedError && unopened >= MAX_UNOPENED) {
          error = new LiveTailRefusedError(`no session started in ${MAX_UNOPENED} tries`, error);
        }
        if (error instanceof LiveTailRefusedError) {
          live = false;
          this.options.log?.warn(
            { err: error, accountId: query.account.id, region: query.region },
            `StartLiveTail refused (${error.reason}): this tail polls FilterLogEvents instead`,
          );
          sink.mode('poll', error.reason);
          continue;
        }
        if (error instanceof LiveTailEndedError) {
          // A renewal (3 h) goes at once; a reconnect backs off if it keeps failing.
          if (error.reason !== 'timeout') failures += 1;
        } else if (error instanceof TailGapError) {
          await sink.fail('gap', error);
          // The window vouches for nothing until the next complete fill.
          window.complete = Number.POSITIVE_INFINITY;
        } else {
          await sink.fail('failed', error);
          return;
        }
        if (failures > 0) await sleep(backoffDelay(failures, RECONNECT_BACKOFF), undefined, { signal }).catch(() => {});
      }
    }
  }

  /** Reads `[from, now]` with FilterLogEvents and adds what the window lacks. */
  private async fill(query: StreamQuery, window: TailWindow, from: number, sink: UpstreamSink, signal: AbortSignal) {
    const batch = await this.options.source.read(query, [{ ts: from, seen: [] }], signal);
    const raws = batch.events.map((e) => ({ ...e, logGroup: e.logGroup ?? '' }));
    const added = window.fill(raws, from);
    const coveredTo = batch.truncated ? batch.coveredTo - 1 : batch.to;
    if (coveredTo > window.coveredTo) window.coveredTo = coveredTo;
    if (!batch.truncated && window.complete === Number.POSITIVE_INFINITY) window.complete = from;
    await sink.publish(added, window.coveredTo);
    if (batch.truncated) throw new TailGapError(`FilterLogEvents could not read everything from ${from}`);
  }

  /** The start of the next fill: the last position vouched for, or (first) the warm-up reach. */
  private fillFrom(window: TailWindow, now: number): number {
    const { lookbackMs, warmupMs } = this.options;
    if (window.complete !== Number.POSITIVE_INFINITY && Number.isFinite(window.coveredTo)) {
      return Math.max(0, window.coveredTo - lookbackMs);
    }
    return Math.max(0, now - lookbackMs - warmupMs);
  }

  private async pollRound(query: StreamQuery, window: TailWindow, sink: UpstreamSink, signal: AbortSignal) {
    await this.fill(query, window, this.fillFrom(window, this.now()), sink, signal);
    await sleep(this.options.pollIntervalMs, undefined, { signal }).catch(() => {});
  }

  /**
   * The account's Live Tail sessions (its quota, cluster-wide): none free within SESSION_SLOT_WAIT_MS, this key
   * polls FilterLogEvents instead, as where StartLiveTail is refused.
   */
  private async sessionSlots(query: StreamQuery, sessions: number, signal: AbortSignal) {
    const take = this.options.sessionSlot;
    if (take === undefined) return undefined;
    const wait = linkSignals([signal], SESSION_SLOT_WAIT_MS, 'a free Live Tail session');
    try {
      return await take(query, sessions, wait.signal);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new LiveTailRefusedError('the Live Tail session quota of the AWS account is in use', error);
    } finally {
      wait.dispose();
    }
  }

  /** One Live Tail session (one per 10 groups) from its start to its end, which always throws. */
  private async liveRound(
    query: StreamQuery,
    window: TailWindow,
    sink: UpstreamSink,
    signal: AbortSignal,
    started: () => void,
  ) {
    let awsAccountId: string;
    try {
      awsAccountId = await this.options.accountId(query.account, signal);
    } catch (error) {
      if (signal.aborted) throw error;
      // Log group ARNs need it: without it (an endpoint without STS), this key polls.
      throw new LiveTailRefusedError('sts:GetCallerIdentity failed', error);
    }
    const byArn = new Map<string, string>();
    for (const group of query.logGroups) byArn.set(logGroupArn(group, query.region, awsAccountId), group);
    const arns = [...byArn.keys()];
    const one = arns.length === 1;
    // Stream names and prefixes go upstream only with exactly one group (AWS); otherwise they are applied here.
    const streams = query.streams;
    const inProcess = !one && streams.kind !== 'all';
    const keep = (stream: string) =>
      !inProcess ||
      (streams.kind === 'names' && streams.names.includes(stream)) ||
      (streams.kind === 'prefix' && stream.startsWith(streams.prefix));
    const sessions: string[][] = [];
    for (let i = 0; i < arns.length; i += GROUPS_PER_SESSION) sessions.push(arns.slice(i, i + GROUPS_PER_SESSION));

    const release = await this.sessionSlots(query, sessions.length, signal);
    const abort = new AbortController();
    const onAbort = () => abort.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const client = this.options.clients.cloudWatchLogs(query.account, query.region);
    const iterators = sessions.map((groups) =>
      liveTail(
        client,
        {
          logGroupIdentifiers: groups,
          ...(one && streams.kind === 'names' ? { logStreamNames: streams.names } : {}),
          ...(one && streams.kind === 'prefix' && streams.prefix !== ''
            ? { logStreamNamePrefixes: [streams.prefix] }
            : {}),
          ...(query.pattern.trim() === '' ? {} : { logEventFilterPattern: query.pattern }),
        },
        abort.signal,
        { openTimeoutMs: this.options.openTimeoutMs },
      )[Symbol.asyncIterator](),
    );
    try {
      // Every session has started before the window is read: what it knew then is what the sessions add to.
      for (const it of iterators) {
        const first = await it.next();
        if (first.done) throw new LiveTailEndedError('dropped', 'the session ended before it started');
        if (first.value.kind !== 'start')
          throw new LiveTailEndedError('dropped', 'its first frame was not sessionStart');
      }
      started();
      const session = window.session();
      await this.fill(query, window, this.fillFrom(window, this.now()), sink, signal);
      const pending = new Map<number, Promise<{ at: number; r: IteratorResult<LiveTailMessage> }>>();
      const pull = (at: number) => {
        const next = iterators[at]!.next().then((r) => ({ at, r }));
        // Raced below; once this round has ended (another session failed, a fill threw) nobody waits on it.
        next.catch(() => {});
        pending.set(at, next);
      };
      iterators.forEach((_, at) => pull(at));
      let sampledSince: number | undefined;
      let lastFill = this.now();
      for (;;) {
        const { at, r } = await Promise.race(pending.values());
        if (r.done) throw new LiveTailEndedError('dropped', 'the session ended without an exception');
        pull(at);
        const message = r.value;
        if (message.kind !== 'update') continue;
        const now = this.now();
        const raws: RawTailEvent[] = [];
        for (const e of message.events) {
          const group = byArn.get(e.logGroupIdentifier.replace(/:\*$/, '')) ?? e.logGroupIdentifier;
          if (!keep(e.logStreamName)) continue;
          raws.push({ ...e, logGroup: group });
        }
        const added = window.live(session, raws);
        if (now > window.coveredTo) window.coveredTo = now;
        await sink.publish(added, window.coveredTo);
        // More than 500 events/s: AWS sent a sample. The rest comes from FilterLogEvents, at most once a second.
        if (message.sampled) sampledSince ??= now - UPDATE_SPAN_MS - this.options.lookbackMs;
        if (sampledSince !== undefined && now - lastFill >= SAMPLED_FILL_EVERY_MS) {
          lastFill = now;
          await this.fill(query, window, sampledSince, sink, signal);
          sampledSince = undefined;
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      abort.abort();
      for (const it of iterators) void it.return?.(undefined).catch(() => {});
      release?.();
    }
  }
}
