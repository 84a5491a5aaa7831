/**
 * One SSE reader in its own process: GETs the URL, reads to the end of the stream and reports how
 * many events came, in how long. Events are counted by their `"logStreamName":` key rather than by
 * parsing each frame, so the reader's cost stays far below the server's on a shared machine.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export interface SseRead {
  status: number;
  events: number;
  bytes: number;
  /** From the request to the end of the stream. */
  ms: number;
  /** Whether the last message said `"isFinal":true`. */
  final: boolean;
  /** The reader hung up at its deadline: the figures are of the part read until then. */
  cut: boolean;
}

const KEY = Buffer.from('"logStreamName":');
const FINAL = Buffer.from('"isFinal":true');

function read(url: string, headers: Record<string, string>, deadlineMs: number): Promise<SseRead> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http
      .get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        let events = 0;
        let bytes = 0;
        // The end of the previous chunk, one byte short of a key: a key split between chunks counts once.
        let carry = Buffer.alloc(0);
        let last = Buffer.alloc(0);
        const timer = setTimeout(() => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, events, bytes, ms: performance.now() - t0, final: false, cut: true });
        }, deadlineMs);
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          const buf = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
          for (let i = buf.indexOf(KEY); i >= 0; i = buf.indexOf(KEY, i + KEY.length)) events++;
          carry = Buffer.from(buf.subarray(Math.max(0, buf.length - KEY.length + 1)));
          last = Buffer.from(buf.subarray(Math.max(0, buf.length - 256)));
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            events,
            bytes,
            ms: performance.now() - t0,
            final: last.includes(FINAL),
            cut: false,
          });
        });
        res.on('error', (error) => {
          if (!req.destroyed) reject(error);
        });
      })
      .on('error', (error) => {
        if (!req.destroyed) reject(error);
      });
  });
}

/** Reads the stream from a separate process, hanging up after `deadlineMs`. */
export function readSse(url: string, headers: Record<string, string> = {}, deadlineMs = 600_000): Promise<SseRead> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--read'], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let settled = false;
    child.once('message', (m: { result?: SseRead; error?: string }) => {
      settled = true;
      if (m.result !== undefined) resolve(m.result);
      else reject(new Error(`SSE reader failed: ${m.error}`));
      child.disconnect();
    });
    child.once('exit', (code) => {
      if (!settled) reject(new Error(`SSE reader exited with ${code}`));
    });
    child.send({ url, headers, deadlineMs });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--read')) {
  process.once('message', (m: { url: string; headers: Record<string, string>; deadlineMs: number }) => {
    read(m.url, m.headers, m.deadlineMs).then(
      (result) => process.send!({ result }),
      (error: unknown) => process.send!({ error: String(error) }),
    );
  });
}
