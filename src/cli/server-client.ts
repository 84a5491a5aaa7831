import { resolve } from 'node:path';
import type { Config } from '../config.js';
import { readLock } from '../store/data-dir-lock.js';
import { CliError } from './cli-error.js';

/** Where a command that changes data goes: the server given by --url, else the one holding the data directory. */
export interface ServerTarget {
  url: string;
  /** The running server's pid, when it was found through the data directory's lock. */
  pid?: number;
}

export function serverTarget(config: Config, url: string | undefined): ServerTarget | undefined {
  if (url !== undefined) return { url };
  const holder = config.DATABASE_URL === undefined ? readLock(resolve(config.BERTH_DATA_DIR)) : null;
  // A holder that serves nothing (a migration, a seed) is waited for by nobody: opening the store says so.
  return holder?.url === undefined ? undefined : { url: holder.url, pid: holder.pid };
}

/** The bearer token for a server: --token, else $BERTH_TOKEN; a missing one says who must hold it. */
export function serverToken(target: ServerTarget, token: string | undefined, who: string): string {
  const found = token ?? process.env.BERTH_TOKEN;
  if (found) return found;
  const held = target.pid === undefined ? '' : ` (pid ${target.pid}) and holds the data directory`;
  throw new CliError(
    `a Berth server is running at ${target.url}${held}; pass --token or set BERTH_TOKEN (${who}) to go through it`,
  );
}

interface ErrorObject {
  code?: string;
  message?: string;
  description?: string;
  details?: readonly { items?: string[] }[];
}

/** An error object as one line, with the fields its details name. */
export function describeFailure(e: ErrorObject): string {
  const items = (e.details ?? []).flatMap((d) => d.items ?? []);
  return [e.message, e.description, ...items].filter((part) => part !== undefined && part !== '').join(' ');
}

/** POSTs JSON; an answer other than `expected` becomes a CliError with the server's error object in one line. */
export async function postJson(url: string, path: string, token: string, body: unknown, expected: number) {
  let response: Response;
  try {
    response = await fetch(new URL(path, url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new CliError(`cannot reach ${url}: ${(error as Error).message}`);
  }
  const text = await response.text();
  const parsed = (() => {
    try {
      return text === '' ? {} : JSON.parse(text);
    } catch {
      return {};
    }
  })();
  if (response.status !== expected) {
    const e = parsed as ErrorObject;
    throw new CliError(`server answered ${response.status} ${e.code ?? ''}: ${describeFailure(e)}`.trim());
  }
  return parsed as unknown;
}
