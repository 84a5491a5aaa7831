// Shared pieces of the fault-injection files: the environment that points a Berth child process at
// the fakes, the faults themselves, timing, /metrics, and raw-socket SSE clients.
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';
import { FAKE_CREDENTIALS, type FaultSpec } from '../../support/fake-aws/index.js';
import { streamQuery } from '../../support/log-stream-wire.js';
import type { Berth } from './berth-process.js';
import { recordSummary } from './summary.js';

/** The SDK's default credential chain of the child finds these (never a real account: every endpoint is a fake). */
export const AWS_ENV: Record<string, string> = {
  AWS_ACCESS_KEY_ID: FAKE_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: FAKE_CREDENTIALS.secretAccessKey,
  AWS_REGION: 'us-east-1',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_SESSION_TOKEN: '',
  AWS_PROFILE: '',
};

/** One fault of the AWS endpoint, applied to every call of the faulty endpoint. */
export interface AwsFault {
  name: string;
  spec: FaultSpec;
  /** Part of the fast subset of plain `npm test`. */
  fast?: boolean;
}

const forever = Number.POSITIVE_INFINITY;

/** Every way the fake endpoint can fail; the full list runs under FULL, the `fast` ones always. */
export const AWS_FAULTS: AwsFault[] = [
  {
    name: '503 ServiceUnavailableException',
    spec: { code: 'ServiceUnavailableException', times: forever },
    fast: true,
  },
  { name: '500 InternalFailure', spec: { code: 'InternalFailure', times: forever } },
  { name: '400 AccessDeniedException', spec: { code: 'AccessDeniedException', status: 400, times: forever } },
  { name: 'ThrottlingException on every call', spec: { code: 'ThrottlingException', times: forever } },
  { name: 'no answer (hang)', spec: { hang: true, times: forever }, fast: true },
  { name: 'connection reset before the answer', spec: { reset: true, times: forever } },
  { name: 'connection reset mid-response', spec: { cutMidBody: true, times: forever }, fast: true },
  {
    name: 'non-JSON 200 body',
    spec: { rawBody: '<html><body>gateway says hello</body></html>', times: forever },
    fast: true,
  },
  {
    name: 'truncated JSON 200 body',
    spec: { rawBody: '{"queryId":"q-1","events":[{"eventId":"1","timest', times: forever },
  },
  {
    name: 'JSON 200 body of the wrong shape',
    spec: {
      rawBody: '{"queryId":{"a":1},"status":7,"results":"none","events":{"x":1},"Certificate":[1,2],"HostedZones":"z"}',
      times: forever,
    },
  },
  { name: 'HTML 502 from a proxy', spec: { rawBody: '<html>502 Bad Gateway</html>', status: 502, times: forever } },
];

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: Math.round(performance.now() - started), value };
}

/** Records a fault survived (or not) with its latency against its bound, and asserts the bound. */
export function recordLatency(check: string, ms: number, boundMs: number, ok = true): void {
  recordSummary({ area: 'faults', check, result: `${ms} ms (bound ${boundMs} ms)`, ok: ok && ms <= boundMs });
  expect(ms, `${check}: ${ms} ms, bound ${boundMs} ms`).toBeLessThanOrEqual(boundMs);
}

/** Sum of the samples of one metric in /metrics (every label set). */
export async function metric(berth: Berth, name: string): Promise<number> {
  const res = await fetch(`${berth.url}/metrics`);
  const text = await res.text();
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? ([^ ]+)/.exec(line);
    if (m?.[1] === name) {
      found = true;
      sum += Number(m[3]);
    }
  }
  if (!found) throw new Error(`/metrics has no ${name}`);
  return sum;
}

/** Waits until `probe` holds, up to `timeoutMs`; answers whether it did. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * GET /cloud/logs/stream on a raw TCP socket, so a test controls the socket itself: stop reading
 * (`pause`), or vanish (`destroy`) part-way through a write.
 */
export interface RawStream {
  socket: Socket;
  /** Bytes received so far (headers included). */
  received(): number;
  /** Resolves once `n` bytes have arrived. */
  until(n: number, timeoutMs?: number): Promise<void>;
  /** Everything received (only when `keep` was set). */
  text(): string;
  /** The HTTP status of the response, once its first line arrived. */
  status(): number | undefined;
  closed: Promise<void>;
}

export function rawStream(
  berth: Berth,
  token: string,
  params: Record<string, string | boolean>,
  keep = false,
): RawStream {
  const { port } = new URL(berth.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(
    `GET /cloud/logs/stream?${streamQuery(params)} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  let bytes = 0;
  let head = '';
  const chunks: Buffer[] = [];
  const waiters = new Set<() => void>();
  socket.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (head.length < 64) head += chunk.subarray(0, 64).toString('latin1');
    if (keep) chunks.push(chunk);
    for (const w of [...waiters]) w();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    received: () => bytes,
    text: () => Buffer.concat(chunks).toString('utf8'),
    status: () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      return m ? Number(m[1]) : undefined;
    },
    closed,
    until: (n, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (bytes >= n) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`only ${bytes} of ${n} bytes within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = () => {
          const status = head.length >= 12 ? /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] : undefined;
          if (status !== undefined && status !== '200') {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`the stream answered ${status}`));
            return;
          }
          if (bytes < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        void closed.then(() => {
          if (bytes < n) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`socket closed after ${bytes} of ${n} bytes`));
          }
        });
      }),
  };
}

/** The SSE frames of a whole response body (after the headers). */
export function sseFrames(body: string): { event?: string; id?: string; data?: any }[] {
  return body
    .split('\n\n')
    .filter((b) => b.trim() !== '' && !b.startsWith(':'))
    .map((block) => {
      const frame: { event?: string; id?: string; data?: any } = {};
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('id: ')) frame.id = line.slice(4);
        else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
      }
      return frame;
    });
}

/** Writes `count` local events (in requests of at most 10,000 events and `bodyBytes`) of about `messageBytes` each into one stream. */
export async function seedLocalEvents(
  berth: Berth,
  token: string,
  target: { accountId: string; region: string; logGroup: string; logStream: string },
  count: number,
  messageBytes: number,
  startMs: number,
  bodyBytes = 900_000,
): Promise<void> {
  const pad = 'x'.repeat(Math.max(0, messageBytes - 24));
  const perRequest = Math.max(1, Math.min(10_000, Math.floor(bodyBytes / (messageBytes + 60))));
  for (let done = 0; done < count; ) {
    const n = Math.min(perRequest, count - done);
    const events = Array.from({ length: n }, (_, i) => ({
      message: `INFO event ${done + i} ${pad}`,
      timestamp: startMs + done + i,
    }));
    const res = await berth.request('POST', '/cloud/logs/local/events', { token, body: { ...target, events } });
    if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${res.text}`);
    done += n;
  }
}
