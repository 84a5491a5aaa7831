import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { SingleBar, Presets } from 'cli-progress';
import type { Config } from '../config.js';
import { openConfiguredStore } from '../runtime.js';
import { AppError } from '../core/errors.js';
import { IngestTimestampSchema } from '../core/schemas/log-ingest.js';
import { epochMsOf } from '../core/log-time.js';
import {
  LogIngestService,
  MAX_EVENTS_PER_INGEST,
  type IngestEvent,
  type IngestTarget,
} from '../services/log-ingest/service.js';
import { strictAjv } from '../core/validation.js';
import { CliError } from './cli-error.js';
import { describeFailure, postJson, serverTarget, serverToken } from './server-client.js';

export interface IngestOptions {
  account: string;
  region: string;
  group: string;
  stream: string;
  format: 'auto' | 'text' | 'json';
  url?: string;
  token?: string;
  progress: boolean;
}

/** Stays under the route's 1 MiB body limit with room for the envelope. */
const MAX_BATCH_BYTES = 900 * 1024;

type Sink = (events: IngestEvent[]) => Promise<void>;

/** The route's own rule, so a line is refused here with its number instead of a whole batch by the server. */
const isTimestamp = strictAjv.compile(IngestTimestampSchema);

/** One line → one event. JSON lines of the form {message, timestamp?} carry their own time. */
export function lineToEvent(line: string, format: IngestOptions['format'], lineNo: number): IngestEvent {
  if (format === 'text') return { message: line };
  if (format === 'json' || line.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (format === 'json') throw new CliError(`line ${lineNo}: not valid JSON`);
      return { message: line };
    }
    const v = value as Record<string, unknown>;
    const keys = v !== null && typeof v === 'object' ? Object.keys(v) : [];
    const isEvent = typeof v?.message === 'string' && keys.every((k) => k === 'message' || k === 'timestamp');
    if (isEvent && (v.timestamp === undefined || typeof v.timestamp === 'number' || typeof v.timestamp === 'string')) {
      if (
        v.timestamp !== undefined &&
        !(isTimestamp(v.timestamp) && !Number.isNaN(epochMsOf(v.timestamp as number | string)))
      ) {
        throw new CliError(
          `line ${lineNo}: timestamp ${JSON.stringify(v.timestamp)} must be epoch milliseconds or an RFC 3339 date-time ` +
            'from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z',
        );
      }
      return { message: v.message as string, timestamp: v.timestamp as number | string | undefined };
    }
    if (format === 'json') throw new CliError(`line ${lineNo}: expected {"message": …, "timestamp"?: …}`);
  }
  return { message: line };
}

function serverSink(url: string, token: string, target: IngestTarget): Sink {
  return async (events) => {
    await postJson(url, '/cloud/logs/local/events', token, { ...target, events }, 202);
  };
}

export async function ingestCommand(config: Config, file: string | undefined, opts: IngestOptions): Promise<void> {
  const target: IngestTarget = {
    accountId: opts.account,
    region: opts.region,
    logGroup: opts.group,
    logStream: opts.stream,
  };
  const server = serverTarget(config, opts.url);
  let close: () => Promise<void> = async () => {};
  let sink: Sink;
  if (server !== undefined) {
    const token = serverToken(server, opts.token, "an admin of the account's organization");
    sink = serverSink(server.url, token, target);
  } else {
    const opened = await openConfiguredStore(config);
    // The quota applies here too; the retention sweep is the server's (none is running).
    const service = new LogIngestService(opened.store.db, config, { embedded: opened.store.target.kind === 'pglite' });
    sink = async (events) => {
      await service.ingest(null, target, events).catch((error: unknown) => {
        throw new CliError(error instanceof AppError ? describeFailure(error) : (error as Error).message);
      });
    };
    close = () => opened.close();
  }

  const input = file === undefined || file === '-' ? process.stdin : createReadStream(file);
  const total = file !== undefined && file !== '-' ? statSync(file).size : 0;
  const bar =
    opts.progress && total > 0 && process.stderr.isTTY
      ? new SingleBar({ stream: process.stderr }, Presets.shades_classic)
      : null;
  bar?.start(total, 0);
  let batch: IngestEvent[] = [];
  let batchBytes = 0;
  let sent = 0;
  let readBytes = 0;
  let lineNo = 0;
  // One batch is written while the next is read: reading and parsing lines overlaps the database's (or the
  // server's) work. Never two batches at once: each starts once the one before it is stored, in the file's order.
  let writing: Promise<void> | undefined;
  const flush = async () => {
    if (batch.length === 0) return;
    const events = batch;
    const readUpTo = readBytes;
    batch = [];
    batchBytes = 0;
    await writing;
    writing = sink(events).then(() => {
      sent += events.length;
      bar?.update(readUpTo);
    });
    // Awaited by the next flush or at the end; until then a failure must not count as unhandled.
    writing.catch(() => {});
  };
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      lineNo++;
      readBytes += Buffer.byteLength(line) + 1;
      if (line.length === 0) continue;
      const event = lineToEvent(line, opts.format, lineNo);
      const size = Buffer.byteLength(event.message) + 64;
      if (batch.length >= MAX_EVENTS_PER_INGEST || batchBytes + size > MAX_BATCH_BYTES) await flush();
      batch.push(event);
      batchBytes += size;
    }
    await flush();
    await writing;
  } finally {
    // A line that failed to parse leaves the batch before it in flight: it ends before the store closes.
    await writing?.catch(() => {});
    bar?.stop();
    await close();
  }
  process.stderr.write(`ingested ${sent} events into ${target.logGroup}/${target.logStream}\n`);
}
