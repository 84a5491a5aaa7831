/**
 * Load side of the latency benchmarks, in its own process: the parent asks for one request at a
 * time (so it can interleave them with its baselines); each is sent on a keep-alive connection to its
 * origin and timed from the first byte written to the last byte read.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export interface ClientRequest {
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Send the response body back (to check it, or to serve the same bytes elsewhere). */
  keepBody?: boolean;
}

export interface ClientResponse {
  status: number;
  bytes: number;
  ms: number;
  body?: string;
}

export interface LoadClient {
  request(r: ClientRequest): Promise<ClientResponse>;
  close(): void;
}

/** Starts the client process. */
export function startClient(): LoadClient {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve-requests'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let next = 0;
  const waiting = new Map<number, { resolve: (r: ClientResponse) => void; reject: (e: Error) => void }>();
  child.on('message', (m: { id: number; error?: string } & ClientResponse) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error !== undefined) w?.reject(new Error(m.error));
    else w?.resolve(m);
  });
  child.on('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`load client exited (${code})`));
    waiting.clear();
  });
  return {
    request: (r) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        child.send({ id, ...r });
      }),
    close: () => {
      child.disconnect();
    },
  };
}

const agents = new Map<string, http.Agent>();

function send(r: ClientRequest): Promise<ClientResponse> {
  const url = new URL(r.url);
  let agent = agents.get(url.origin);
  if (agent === undefined) agents.set(url.origin, (agent = new http.Agent({ keepAlive: true, maxSockets: 1 })));
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      url,
      {
        agent,
        method: r.method,
        headers: {
          ...(r.headers ?? {}),
          ...(r.body === undefined ? {} : { 'content-length': Buffer.byteLength(r.body) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const ms = performance.now() - t0;
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            bytes: body.length,
            ms,
            ...(r.keepBody || res.statusCode !== 200 ? { body: body.toString() } : {}),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(r.body);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'serve-requests') {
  process.on('message', (m: { id: number } & ClientRequest) => {
    send(m).then(
      (r) => process.send!({ id: m.id, ...r }),
      (error: unknown) => process.send!({ id: m.id, error: String(error) }),
    );
  });
  process.on('disconnect', () => {
    for (const a of agents.values()) a.destroy();
  });
}
