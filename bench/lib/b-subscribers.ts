/**
 * Live-tail subscribers in their own process (not Berth's, not the writer's): N SSE connections to one
 * stream URL, each parsing its messages. Events are `bench <seq> <ms>` where `<ms>` is the writer's
 * monotonic clock (`process.hrtime`, one clock for every process of the machine) when it began writing
 * the event; the delay of a delivery is the subscriber's clock when it parsed the message minus that.
 * `warm` events only mark a subscriber as in the tail.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { quantile } from './stats.js';

/** Milliseconds on the machine's monotonic clock, comparable between processes. */
export const monotonicMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

export interface Progress {
  opened: number;
  warm: number;
  /** Fewest bench events any subscriber has received. */
  minCount: number;
  failed: number;
}

export interface Delivery {
  counts: number[];
  repeats: number;
  errors: string[];
  deliveries: number;
  p50: number;
  p99: number;
  max: number;
}

type Reply =
  | { type: 'opened' }
  | ({ type: 'progress' } & Progress)
  | ({ type: 'result' } & Delivery)
  | { type: 'error'; error: string };

export interface Subscribers {
  progress(): Promise<Progress>;
  finish(): Promise<Delivery>;
  close(): void;
}

/**
 * Opens `n` subscribers of `url` in a child process (several URLs: the i-th subscriber on `url[i % length]`);
 * resolves once every one has its response headers.
 */
export async function openSubscribers(
  url: string | string[],
  token: string,
  n: number,
  total: number,
): Promise<Subscribers> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--subscribe'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting: ((r: Reply) => void)[] = [];
  let failure: Error | undefined;
  child.on('message', (r: Reply) => {
    if (r.type === 'error') failure = new Error(r.error);
    waiting.shift()?.(r);
  });
  child.on('exit', (code) => {
    failure ??= new Error(`subscriber process exited with ${code}`);
    for (const w of waiting.splice(0)) w({ type: 'error', error: failure.message });
  });
  const ask = <T extends Reply['type']>(message: unknown): Promise<Extract<Reply, { type: T }>> =>
    new Promise((resolve, reject) => {
      if (failure !== undefined) return reject(failure);
      waiting.push((r) =>
        r.type === 'error' ? reject(new Error(r.error)) : resolve(r as Extract<Reply, { type: T }>),
      );
      child.send(message as object);
    });
  await ask<'opened'>({ type: 'open', url, token, n, total });
  return {
    progress: () => ask<'progress'>({ type: 'progress' }),
    finish: () => ask<'result'>({ type: 'finish' }),
    close: () => {
      if (child.exitCode === null) child.kill('SIGTERM');
    },
  };
}

interface Sub {
  count: number;
  repeats: number;
  warm: boolean;
  ended: boolean;
  error?: string;
  seen: Uint8Array;
}

function subscribe(url: string, token: string, total: number, subs: Sub[], delays: number[]): Promise<void> {
  const sub: Sub = { count: 0, repeats: 0, warm: false, ended: false, seen: new Uint8Array(total) };
  subs.push(sub);
  const onMessage = (frame: string) => {
    const line = frame.split('\n').find((l) => l.startsWith('data: '));
    if (line === undefined) return;
    const payload = JSON.parse(line.slice(6)) as { events: { message: string }[]; isFinal: boolean };
    const at = monotonicMs();
    for (const e of payload.events) {
      const [kind, seq, ms] = e.message.split(' ');
      if (kind === 'warm') {
        sub.warm = true;
        continue;
      }
      const i = Number(seq);
      if (sub.seen[i] === 1) sub.repeats++;
      else {
        sub.seen[i] = 1;
        sub.count++;
      }
      delays.push(at - Number(ms));
    }
    if (payload.isFinal) sub.ended = true;
  };
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`subscriber: HTTP ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          onMessage(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      });
      res.on('end', () => (sub.ended = true));
      res.on('error', (error) => (sub.error = String(error)));
      resolve();
    });
    req.on('error', (error) => {
      sub.error = String(error);
      reject(error);
    });
  });
}

type Message = { type: string; url: string | string[]; token: string; n: number; total: number };

function serve(): void {
  const subs: Sub[] = [];
  const delays: number[] = [];
  const reply = (r: Reply) => process.send!(r);
  process.on('message', async (m: Message) => {
    try {
      if (m.type === 'open') {
        // In waves, so opening does not look like a flood of the accept queue.
        for (let i = 0; i < m.n; i += 50) {
          const wave = Math.min(50, m.n - i);
          const urls = [m.url].flat();
          await Promise.all(
            Array.from({ length: wave }, (_, k) =>
              subscribe(urls[(i + k) % urls.length]!, m.token, m.total, subs, delays),
            ),
          );
        }
        reply({ type: 'opened' });
      } else if (m.type === 'progress') {
        reply({
          type: 'progress',
          opened: subs.length,
          warm: subs.filter((s) => s.warm).length,
          minCount: Math.min(...subs.map((s) => s.count)),
          failed: subs.filter((s) => s.error !== undefined || s.ended).length,
        });
      } else if (m.type === 'finish') {
        reply({
          type: 'result',
          counts: subs.map((s) => s.count),
          repeats: subs.reduce((a, s) => a + s.repeats, 0),
          errors: subs.filter((s) => s.error !== undefined || s.ended).map((s) => s.error ?? 'ended early'),
          deliveries: delays.length,
          p50: quantile(delays, 0.5),
          p99: quantile(delays, 0.99),
          max: quantile(delays, 1),
        });
        process.exit(0);
      }
    } catch (error) {
      reply({ type: 'error', error: String(error) });
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--subscribe')) serve();
