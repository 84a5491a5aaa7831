import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StoreTarget } from '../../src/store/db.js';
import type { ReplayStatement } from './sql-capture.js';
import type { RunFigures } from './stats.js';

export interface SqlLoadOptions {
  /** Captured requests, each its statements in order; the loops take them in turn. */
  requests: ReplayStatement[][];
  /**
   * Parameter values that must differ on every execution (a new row's id, a unique `givenId`):
   * a UUID becomes a new UUID, anything else gets a unique suffix.
   */
  unique?: string[];
  concurrency: number;
  durationS: number;
}

export interface SqlLoadResult extends RunFigures {
  /** Requests (whole statement sequences) completed. */
  count: number;
  durationS: number;
}

export interface SqlLoad {
  run(options: SqlLoadOptions): Promise<SqlLoadResult>;
  close(): Promise<void>;
}

const WORKER = fileURLToPath(new URL('./sql-load-worker.ts', import.meta.url));

/** A process holding Berth's store on `target`, ready to replay SQL as load. */
export async function startSqlLoad(target: StoreTarget): Promise<SqlLoad> {
  const child = fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await ask(child, { type: 'open', target });
  return {
    run: (options) => ask(child, { type: 'run', options }) as Promise<SqlLoadResult>,
    close: async () => {
      child.disconnect();
      await exited;
    },
  };
}

function ask(child: ChildProcess, message: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`SQL load worker exited with ${code}`));
    child.once('exit', onExit);
    child.once('message', (answer: { result?: unknown; error?: string }) => {
      child.off('exit', onExit);
      if (answer.error !== undefined) reject(new Error(`SQL load worker: ${answer.error}`));
      else resolve(answer.result);
    });
    child.send(message as object);
  });
}
