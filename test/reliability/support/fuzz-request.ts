// A fuzzed HTTP request: what the generators produce, what the wire sends, and what a failure prints
// (a curl command and the exact bytes, so a shrunk counterexample can be replayed by hand).
import fc from 'fast-check';
import { bytesCommand } from './fuzz-wire.js';

/** The port a replay command names (the suite's server listens on a random one). */
export let replayPort = 8080;
export function setReplayPort(port: number): void {
  replayPort = port;
}

export interface FuzzRequestInit {
  method: string;
  /** The request-target exactly as sent; each character is one byte (latin1), so invalid UTF-8 can be sent. */
  target: string;
  /** Sent in order, as given (latin1); Host, Content-Length and Connection are added unless present. */
  headers?: [string, string][];
  body?: Buffer;
  /** Leave out the Host header (a complete HTTP/1.1 request that lacks it). */
  noHost?: boolean;
  /** What the generator meant, printed with the request. */
  note?: string;
}

export class FuzzRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: [string, string][];
  readonly body: Buffer | undefined;
  readonly noHost: boolean;
  readonly note: string | undefined;

  constructor(init: FuzzRequestInit) {
    this.method = init.method;
    this.target = init.target;
    this.headers = init.headers ?? [];
    this.body = init.body;
    this.noHost = init.noHost ?? false;
    this.note = init.note;
  }

  private has(name: string): boolean {
    return this.headers.some(([n]) => n.toLowerCase() === name);
  }

  /** The request as bytes: always one complete HTTP/1.1 message, ended with `Connection: close` unless the generator set Connection. */
  bytes(port = replayPort): Buffer {
    const lines = [`${this.method} ${this.target} HTTP/1.1`];
    if (!this.noHost && !this.has('host')) lines.push(`Host: 127.0.0.1:${port}`);
    for (const [name, value] of this.headers) lines.push(`${name}: ${value}`);
    if (this.body !== undefined && !this.has('content-length') && !this.has('transfer-encoding'))
      lines.push(`Content-Length: ${this.body.length}`);
    if (!this.has('connection')) lines.push('Connection: close');
    const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    return this.body === undefined ? head : Buffer.concat([head, this.body]);
  }

  /** A curl command sending the same request (best effort: curl adds its own headers). */
  curl(port = replayPort): string {
    const q = (s: string) => `$'${[...Buffer.from(s, 'latin1')].map(escapeByte).join('')}'`;
    const parts = ['curl -sS -i --path-as-is', `-X ${q(this.method)}`];
    if (this.noHost) parts.push("-H 'Host:'");
    for (const [name, value] of this.headers) parts.push(`-H ${q(`${name}: ${value}`)}`);
    if (this.body !== undefined) parts.push('--data-binary @-');
    parts.push(q(`http://127.0.0.1:${port}${this.target}`));
    const command = parts.join(' ');
    return this.body === undefined ? command : `${bytesCommand(this.body)} | ${command}`;
  }

  describe(port = replayPort): string {
    return [
      this.note === undefined ? '' : `(${this.note})`,
      this.target.length > 2_000
        ? 'curl: (the target is too long to read; use the raw form)'
        : `curl: ${this.curl(port)}`,
      `raw:  ${bytesCommand(this.bytes(port))} | nc 127.0.0.1 ${port}`,
    ]
      .filter((l) => l !== '')
      .join('\n  ');
  }

  toString(): string {
    return this.describe();
  }

  [fc.toStringMethod](): string {
    return `\n  ${this.describe()}\n`;
  }
}

function escapeByte(byte: number): string {
  if (byte === 0x27) return "\\'";
  if (byte === 0x5c) return '\\\\';
  if (byte >= 0x20 && byte < 0x7f) return String.fromCharCode(byte);
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}
