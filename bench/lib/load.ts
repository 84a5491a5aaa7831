import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunFigures } from './stats.js';

export interface LoadOptions {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** One path, or several taken in turn by every connection. */
  path: string | string[];
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A body in which each `{{n}}` becomes a number unique to the run (one per request). */
  bodyTemplate?: string;
  connections: number;
  durationS: number;
}

export interface LoadResult extends RunFigures {
  /** 2xx responses; `rate` counts only these. */
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationS: number;
}

const WORKER = fileURLToPath(new URL('./load-worker.ts', import.meta.url));

/**
 * One autocannon run from a separate process, so the load generator never shares an event loop
 * with what it measures. Rejects when any answer was not 2xx: a figure over failures means nothing.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const result = await loadOnce(options);
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(
      `load on ${options.method ?? 'GET'} ${[options.path].flat()[0]}: ${result.non2xx} non-2xx answers, ${result.errors} errors (${result.timeouts} timeouts) of ${result.ok + result.non2xx}`,
    );
  return result;
}

function loadOnce(options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let settled = false;
    child.once('message', (message: { result?: LoadResult; error?: string }) => {
      settled = true;
      if (message.result !== undefined) resolve(message.result);
      else reject(new Error(`load worker failed: ${message.error}`));
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!settled) reject(new Error(`load worker exited with ${code} before answering`));
    });
    child.send(options);
  });
}
