import type { ServerResponse } from 'node:http';

/**
 * Server-sent events on a raw response: one `data:` line per message (JSON
 * never contains a raw newline), an `id:` to resume from, comments for
 * keep-alive. Writes report backpressure instead of buffering without bound.
 */
export class SseWriter {
  private closed = false;

  constructor(private readonly res: ServerResponse) {}

  open(headers: Record<string, string>): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
      ...headers,
    });
    this.res.flushHeaders();
  }

  get isClosed(): boolean {
    return this.closed || this.res.destroyed || this.res.writableEnded;
  }

  /** True while the socket's buffer is over its high-water mark. */
  get congested(): boolean {
    return this.res.writableNeedDrain;
  }

  send(message: { id?: string; event?: string; data: unknown }): void {
    if (this.isClosed) return;
    let frame = '';
    if (message.event !== undefined) frame += `event: ${message.event}\n`;
    if (message.id !== undefined) frame += `id: ${message.id}\n`;
    frame += `data: ${JSON.stringify(message.data)}\n\n`;
    this.res.write(frame);
  }

  comment(text: string): void {
    if (!this.isClosed) this.res.write(`: ${text}\n\n`);
  }

  /** Resolves when the client has taken what was written (or is gone). */
  drained(): Promise<void> {
    if (!this.congested || this.isClosed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.res.writableEnded) this.res.end();
  }
}
