// What the live-tail tests share: a TCP proxy to sever, a fetch that records what it sent, a collector.
import net from 'node:net';
import type { TailEvent, TailState, TailStatus } from '../../../ui/src/lib/live-tail.js';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

export interface TcpProxy {
  url: string;
  /** Connections open through the proxy now. */
  open(): number;
  /** Destroys every connection at once, as a network failure would. */
  cut(): void;
  close(): Promise<void>;
}

/** A TCP proxy on loopback in front of `target` (http://127.0.0.1:port). */
export async function startProxy(target: string): Promise<TcpProxy> {
  const port = Number(new URL(target).port);
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    for (const s of pair) s.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    open: () => pairs.size,
    cut: () => {
      for (const [a, b] of [...pairs]) {
        a.destroy();
        b.destroy();
      }
    },
    close: async () => {
      for (const [a, b] of [...pairs]) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface FetchCall {
  url: URL;
  headers: Record<string, string>;
}

/** The global fetch, recording each request's URL and headers. */
export function recordingFetch(): { calls: FetchCall[]; fetch: typeof fetch } {
  const calls: FetchCall[] = [];
  return {
    calls,
    fetch: (input, init) => {
      calls.push({ url: new URL(String(input)), headers: { ...(init?.headers as Record<string, string>) } });
      return fetch(input, init);
    },
  };
}

/** Everything a LiveTail reported: events per group and the statuses in order. */
export function collector() {
  const events: { event: TailEvent; group: number }[] = [];
  const statuses: TailStatus[] = [];
  return {
    events,
    statuses,
    onEvents: (batch: TailEvent[], group: number) => {
      for (const event of batch) events.push({ event, group });
    },
    onState: (s: TailStatus) => {
      statuses.push(s);
    },
    messages: (group?: number) =>
      events.filter((e) => group === undefined || e.group === group).map((e) => e.event.message),
    seen: (state: TailState, stream?: number) =>
      statuses.some((s) => (stream === undefined ? s.state : s.streams[stream]?.state) === state),
    last: () => statuses.at(-1),
  };
}

/** Every one of `expected` exactly once, and nothing else. */
export function exactlyOnce(got: string[], expected: string[]): void {
  const counts = new Map<string, number>();
  for (const m of got) counts.set(m, (counts.get(m) ?? 0) + 1);
  const repeated = [...counts].filter(([, n]) => n > 1).map(([m]) => m);
  const missing = expected.filter((m) => !counts.has(m));
  const extra = [...counts.keys()].filter((m) => !expected.includes(m));
  if (repeated.length + missing.length + extra.length > 0) {
    throw new Error(
      `repeated ${JSON.stringify(repeated.slice(0, 5))}, missing ${JSON.stringify(missing.slice(0, 5))} (${missing.length}), ` +
        `unexpected ${JSON.stringify(extra.slice(0, 5))}`,
    );
  }
}
