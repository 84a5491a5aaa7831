import type { ServerResponse } from 'node:http';
import { type Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Starts a server-sent event stream on a raw response: status and headers, sent at once. */
export function openSse(res: ServerResponse, headers: Record<string, string>): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.flushHeaders();
}

/** One message: one `data:` line (JSON never contains a raw newline), an `id:` to resume from, an event name. */
export function sseMessage(message: { id?: string; event?: string; data: unknown }): string {
  let frame = '';
  if (message.event !== undefined) frame += `event: ${message.event}\n`;
  if (message.id !== undefined) frame += `id: ${message.id}\n`;
  return `${frame}data: ${JSON.stringify(message.data)}\n\n`;
}

export const sseComment = (text: string): string => `: ${text}\n\n`;

/**
 * Writes a stream of values to the response as server-sent events, `frame` turning each into its text, and
 * ends the response when the values end. Backpressure: a value is taken only once the response has accepted
 * the one before without exceeding its buffer (or, when it had to, once it drained), so a client that stops
 * reading stops the values at one waiting in `values`. A client that goes away destroys `values`, which stops
 * its work; the promise then resolves as at the end. It rejects only when `frame` fails.
 */
export async function sendSse<T>(values: Readable, frame: (value: T) => string, res: ServerResponse): Promise<void> {
  if (res.destroyed) {
    values.destroy();
    return;
  }
  let fault: unknown;
  const sink = new Writable({
    objectMode: true,
    // One value at a time: the next is taken from `values` once this one is in the response's buffer.
    highWaterMark: 1,
    write(value: T, _encoding, done) {
      let text: string;
      try {
        text = frame(value);
      } catch (error) {
        fault = error;
        return done(error as Error);
      }
      if (res.write(text)) done();
      else res.once('drain', () => done());
    },
    final(done) {
      res.end();
      done();
    },
  });
  // The response closes when it has ended, or when the client went away: then nothing more can be written.
  res.once('close', () => sink.destroy());
  // Any failure but `fault` is a premature close: the client went away.
  await pipeline(values, sink).catch(() => undefined);
  if (fault !== undefined) throw fault;
}
