/**
 * What the main thread and a PGlite worker (`pglite-worker.ts`) say to each other. A worker opens one
 * instance when told to, with its generation number (unique for the store's life).
 */

export interface WorkerSettings {
  /** Undefined: in memory. */
  dataDir: string | undefined;
  /** In memory only: a data-directory dump (tar) to start from instead of creating the cluster. */
  template?: string | undefined;
}

export type WorkerRequest = { id: number } & (
  | { op: 'open'; generation: number }
  /**
   * `session`: the connection it belongs to; `group`: whose turn it is (the worker serves groups round-robin);
   * `txn`: it begins a transaction (the worker then runs that session's statements only) or ends one.
   */
  | {
      op: 'query';
      sql: string;
      params: readonly unknown[];
      session: number;
      group: string;
      txn?: 'begin' | 'end';
      /** Rows as arrays of column values (`RunOptions.arrays`). */
      arrays?: boolean;
    }
  | { op: 'exec'; sql: string }
  | { op: 'listen'; channel: string; listenId: number }
  | { op: 'unlisten'; listenId: number }
  | { op: 'injectWalWriteFailure' }
  | { op: 'close' }
  /** Fault injection (tests only): the worker thread crashes. */
  | { op: 'crash' }
);

export interface QueryReply {
  rows: unknown[];
  affectedRows?: number;
}

export type WorkerEvent =
  | { type: 'reply'; id: number; ok: true; value?: QueryReply }
  /** `unavailable`: the message of the DatabaseUnavailableError to throw, `error` its cause. */
  | { type: 'reply'; id: number; ok: false; error: SerializedError; unavailable?: string }
  | { type: 'opened'; generation: number }
  /** The instance died: the worker calls it no more, and is to be ended. */
  | { type: 'died'; generation: number; error: SerializedError }
  /** The instance could not be opened. */
  | { type: 'failed'; error: SerializedError }
  | { type: 'notification'; listenId: number; payload: string };

/**
 * An error as it crosses the thread. Structured cloning keeps an Error's message but drops the fields
 * PostgreSQL errors carry (code, severity, detail, constraint...), which callers test (`code === '23505'`).
 */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** Own fields of primitive value. */
  fields: Record<string, string | number | boolean | null>;
  cause?: SerializedError;
}

export function serializeError(error: unknown, depth = 0): SerializedError {
  if (typeof error !== 'object' || error === null) return { name: 'Error', message: String(error), fields: {} };
  const e = error as Record<string, unknown>;
  const fields: SerializedError['fields'] = {};
  for (const [key, value] of Object.entries(e)) {
    if (key === 'name' || key === 'message' || key === 'stack' || key === 'cause') continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value as never;
  }
  const serialized: SerializedError = {
    name: typeof e.name === 'string' ? e.name : (error.constructor?.name ?? 'Error'),
    message: typeof e.message === 'string' ? e.message : String(error),
    fields,
  };
  if (typeof e.stack === 'string') serialized.stack = e.stack;
  if (e.cause !== undefined && depth < 3) serialized.cause = serializeError(e.cause, depth + 1);
  return serialized;
}

export function reviveError(serialized: SerializedError): Error {
  const options = serialized.cause === undefined ? undefined : { cause: reviveError(serialized.cause) };
  const error = new Error(serialized.message, options);
  Object.assign(error, serialized.fields);
  error.name = serialized.name;
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  return error;
}
