import type { Socket } from 'node:net';

/** How long a closing connection keeps reading what the client still sends after the answer. */
export const LINGER_MS = 2_000;

/**
 * Closes a connection lingering: ends our side, keeps reading (and dropping) what the client still sends, and
 * destroys the socket at the client's end or after `LINGER_MS`. Destroying it at once while the client is still
 * sending makes the kernel reset the connection, and the client loses the answer written just before.
 */
export function lingeringClose(this: Socket): void {
  if (this.writable) this.end();
  const close = () => this.destroy();
  if (this.readableEnded || this.destroyed) {
    if (this.writableFinished) close();
    else this.once('finish', close);
    return;
  }
  const timer = setTimeout(close, LINGER_MS).unref();
  this.once('end', close);
  this.once('close', () => clearTimeout(timer));
}
