// The log stream as a service: an async iterable of typed events, without HTTP. Framing and the wire are
// tested over HTTP in test/http/logs-stream*.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import {
  predicateFilter,
  type HistoryCursor,
  type StreamEvent,
  type StreamQuery,
  type StreamSource,
} from '../../src/providers/log-stream/port.js';
import { encodeEventId } from '../../src/services/log-stream/resume-id.js';
import { LogStream, type LogStreamEvent, type StreamPlan } from '../../src/services/log-stream/stream.js';
import { TailHub } from '../../src/services/log-stream/tail-hub.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const event = (n: number): StreamEvent => ({
  eventId: String(n).padStart(8, '0'),
  logStreamName: 'web/1',
  message: `event ${n}`,
  timestamp: 1_700_000_000_000 + n,
  ingestionTime: 1_700_000_000_000 + n,
  level: 'INFO',
});

/** Events 0..n-1 in history; `append` adds tail events. Cursors are the number of events already taken. */
class MemorySource implements StreamSource<number, StreamEvent[]> {
  readonly events: StreamEvent[];
  readonly tailing = { kind: 'polled' } as const;
  batchesRead = 0;
  signal: AbortSignal | undefined;

  constructor(historySize: number) {
    this.events = Array.from({ length: historySize }, (_, i) => event(i));
  }

  append(count: number): void {
    for (let i = 0; i < count; i++) this.events.push(event(this.events.length));
  }

  async tailStart(): Promise<number> {
    return this.events.length;
  }

  async *history(
    _q: StreamQuery,
    _w: { startMs: number; endMs: number },
    _after: HistoryCursor | undefined,
    switchPoint: number | undefined,
    batchSize: number,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent[]> {
    this.signal = signal;
    const end = switchPoint ?? this.events.length;
    for (let i = 0; i < end && !signal.aborted; i += batchSize) {
      this.batchesRead++;
      yield this.events.slice(i, Math.min(i + batchSize, end));
    }
  }

  async read(): Promise<StreamEvent[]> {
    return [...this.events];
  }

  advance(cursor: number, all: StreamEvent[], _startMs: number, limit = Number.POSITIVE_INFINITY) {
    const events = all.slice(cursor, cursor + limit);
    return { events, cursor: cursor + events.length, more: cursor + events.length < all.length };
  }

  compact(cursor: number): unknown {
    return cursor;
  }

  restore(value: unknown): number | undefined {
    return typeof value === 'number' ? value : undefined;
  }
}

const query: StreamQuery = {
  account: {
    id: 'acc',
    organizationId: 'org',
    provider: 'local',
    region: 'us-east-1',
    roleArn: null,
    externalId: null,
    endpoint: null,
  },
  region: 'us-east-1',
  logGroups: ['/app'],
  streams: { kind: 'all' },
  pattern: '',
  filter: predicateFilter(() => true),
};
const hubs: TailHub[] = [];
const streams: LogStream[] = [];

function open(source: MemorySource, options: { tail?: boolean; batchSize?: number; keepAliveMs?: number } = {}) {
  const hub = new TailHub(20, { maxPerDelivery: options.batchSize ?? 10 });
  const ended = { count: 0 };
  const plan: StreamPlan = {
    query,
    source,
    startMs: 0,
    endMs: Number.MAX_SAFE_INTEGER,
    tail: options.tail ?? false,
    resume: undefined,
    startId: 'start',
  };
  const stream = new LogStream(plan, {
    hub,
    batchSize: options.batchSize ?? 10,
    keepAliveMs: options.keepAliveMs ?? 60_000,
    maxDurationMs: 60_000,
    onEnd: () => ended.count++,
  });
  hubs.push(hub);
  streams.push(stream);
  stream.start();
  return { stream, hub, ended };
}

/** Takes events until `n` log events have come (or the stream ends), and leaves the stream open. */
async function take(stream: LogStream, n: number): Promise<LogStreamEvent[]> {
  const out: LogStreamEvent[] = [];
  let count = 0;
  for await (const e of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<LogStreamEvent>) {
    out.push(e);
    if (e.kind === 'events') count += e.events.length;
    if (count >= n || e.kind === 'final') break;
  }
  return out;
}

afterEach(() => {
  for (const s of streams.splice(0)) s.destroy();
  for (const h of hubs.splice(0)) h.close();
});

describe('a log stream', () => {
  it('yields the history in batches, each with the id that resumes after its last event, then the final event', async () => {
    const { stream, ended } = open(new MemorySource(25));
    const out: LogStreamEvent[] = [];
    for await (const e of stream) out.push(e);
    const batches = out.filter((e) => e.kind === 'events');
    expect(batches.map((b) => b.events.map((e) => e.message))).toEqual([
      Array.from({ length: 10 }, (_, i) => `event ${i}`),
      Array.from({ length: 10 }, (_, i) => `event ${i + 10}`),
      Array.from({ length: 5 }, (_, i) => `event ${i + 20}`),
    ]);
    expect(batches[0]!.events[0]!.timestamp).toBe(new Date(1_700_000_000_000).toISOString());
    const last = event(24);
    expect(batches[2]!.id).toBe(encodeEventId({ p: 'h', ts: last.timestamp, e: last.eventId }));
    expect(out.at(-1)).toEqual({ kind: 'final', id: batches[2]!.id });
    expect(ended.count).toBe(1);
  });

  it('reads no more history than one batch ahead of a consumer that has stopped taking events', async () => {
    const source = new MemorySource(1_000);
    const { stream } = open(source);
    await take(stream, 20);
    await sleep(100);
    expect(source.batchesRead).toBeLessThanOrEqual(4);
    const rest = await take(stream, 1_000);
    expect(rest.at(-1)?.kind).toBe('final');
    expect(source.batchesRead).toBe(100);
  });

  it('stops its upstream work when destroyed (the consumer went away), and yields nothing more', async () => {
    const source = new MemorySource(1_000);
    const { stream, ended } = open(source);
    await take(stream, 10);
    stream.destroy();
    await sleep(20);
    expect(source.signal?.aborted).toBe(true);
    expect(ended.count).toBe(1);
    expect(source.batchesRead).toBeLessThan(100);
  });

  it('holds one delivery at most for a tail consumer that stops reading, and loses nothing once it reads again', async () => {
    const source = new MemorySource(0);
    const { stream, hub } = open(source, { tail: true, batchSize: 5 });
    await sleep(10);
    source.append(100);
    await sleep(200); // ten poll intervals
    // Nothing read yet: one message waits in the stream, and the poller has stopped reading for it; the rest
    // stays upstream, behind its cursor.
    expect(stream.readableLength).toBe(1);
    const polls = hub.polls;
    await sleep(100);
    expect(hub.polls).toBe(polls);
    const got = await take(stream, 100);
    const messages = got.flatMap((e) => (e.kind === 'events' ? e.events.map((x) => x.message) : []));
    expect(messages).toEqual(Array.from({ length: 100 }, (_, i) => `event ${i}`));
  });

  it('yields keep-alives while idle, and keeps only one waiting for a consumer that is not reading', async () => {
    const { stream } = open(new MemorySource(0), { tail: true, keepAliveMs: 20 });
    await sleep(150);
    expect(stream.readableLength).toBe(1);
    const [first] = await take(stream, 0);
    expect(first).toEqual({ kind: 'keep-alive' });
  });

  it('ends with the final event when stopped (shutdown), after what was already yielded', async () => {
    const source = new MemorySource(0);
    const { stream, ended } = open(source, { tail: true });
    await sleep(10);
    source.append(3);
    await sleep(100); // delivered by a poll, not yet taken
    stream.stop();
    const out: LogStreamEvent[] = [];
    for await (const e of stream) out.push(e);
    expect(out.map((e) => e.kind)).toEqual(['events', 'final']);
    expect((out[0] as { events: unknown[] }).events).toHaveLength(3);
    expect(out[1]).toEqual({ kind: 'final', id: (out[0] as { id: string }).id });
    expect(ended.count).toBe(1);
  });

  it('reads a woken key at most once per 50 ms, however often it is woken and however slow its reads', async () => {
    // Each read takes 30 ms and the client always keeps up: wakes arriving during a read must not turn into
    // back-to-back reads (33 a second).
    class SlowSource extends MemorySource {
      override async read(): Promise<StreamEvent[]> {
        await sleep(30);
        return super.read();
      }
    }
    const source = new SlowSource(0);
    const hub = new TailHub(10_000);
    hubs.push(hub);
    const got: string[] = [];
    const failures: unknown[] = [];
    hub.subscribe(source, query, {
      cursor: await source.tailStart(),
      startMs: 0,
      ready: () => true,
      deliver: (events) => got.push(...events.map((e) => e.message)),
      fail: (error) => failures.push(error),
    });
    const before = { reads: hub.reads, at: performance.now() };
    for (const started = performance.now(); performance.now() - started < 1_000; ) {
      source.append(1);
      hub.wakeAccount('acc');
      await sleep(5);
    }
    const elapsedMs = performance.now() - before.at;
    const reads = hub.reads - before.reads;
    expect(reads, `${reads} reads in ${elapsedMs} ms`).toBeLessThanOrEqual(elapsedMs / 50 + 2);
    expect(reads).toBeGreaterThanOrEqual(5); // woken, not left to the 10 s interval
    // Nothing is lost to the spacing: the last wake's events come with the read that follows it.
    const total = source.events.length;
    for (const deadline = Date.now() + 2_000; got.length < total && Date.now() < deadline; ) await sleep(10);
    expect(got).toEqual(Array.from({ length: total }, (_, i) => `event ${i}`));
    expect(failures).toEqual([]);
  });
});
