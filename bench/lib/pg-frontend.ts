/**
 * Reads the statements a PostgreSQL client sends, from the frontend side of the wire protocol
 * (https://www.postgresql.org/docs/current/protocol-message-formats.html): simple queries (`Q`)
 * and extended-protocol executions (`Parse` of the text, then `Bind` of the parameters).
 * Parameters come as the client sent them: text, `null`, or a Buffer for binary ones.
 */
export interface WireStatement {
  sql: string;
  params: (string | Buffer | null)[];
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export class FrontendReader {
  #buffer: Buffer = Buffer.alloc(0);
  #started = false;
  readonly #prepared = new Map<string, string>();

  constructor(private readonly onStatement: (statement: WireStatement) => void) {}

  push(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (!this.#started) {
        // Untyped: SSL/GSS requests, then the startup message.
        if (this.#buffer.length < 8) return;
        const length = this.#buffer.readInt32BE(0);
        if (this.#buffer.length < length) return;
        const code = this.#buffer.readInt32BE(4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) this.#started = true;
        this.#buffer = this.#buffer.subarray(length);
        continue;
      }
      if (this.#buffer.length < 5) return;
      const length = this.#buffer.readInt32BE(1);
      if (this.#buffer.length < 1 + length) return;
      const type = String.fromCharCode(this.#buffer[0]!);
      this.#message(type, this.#buffer.subarray(5, 1 + length));
      this.#buffer = this.#buffer.subarray(1 + length);
    }
  }

  #message(type: string, body: Buffer): void {
    if (type === 'Q') {
      this.onStatement({ sql: cstring(body, 0).value, params: [] });
    } else if (type === 'P') {
      const name = cstring(body, 0);
      const text = cstring(body, name.next);
      this.#prepared.set(name.value, text.value);
    } else if (type === 'B') {
      this.#bind(body);
    }
  }

  #bind(body: Buffer): void {
    const portal = cstring(body, 0);
    const statement = cstring(body, portal.next);
    let at = statement.next;
    const formatCount = body.readInt16BE(at);
    at += 2;
    const formats: number[] = [];
    for (let i = 0; i < formatCount; i++, at += 2) formats.push(body.readInt16BE(at));
    const paramCount = body.readInt16BE(at);
    at += 2;
    const params: (string | Buffer | null)[] = [];
    for (let i = 0; i < paramCount; i++) {
      const length = body.readInt32BE(at);
      at += 4;
      if (length === -1) {
        params.push(null);
        continue;
      }
      const bytes = body.subarray(at, at + length);
      at += length;
      const binary = (formats.length === 1 ? formats[0] : formats[i]) === 1;
      params.push(binary ? Buffer.from(bytes) : bytes.toString('utf8'));
    }
    const sql = this.#prepared.get(statement.value);
    if (sql !== undefined) this.onStatement({ sql, params });
  }
}

function cstring(buffer: Buffer, start: number): { value: string; next: number } {
  const end = buffer.indexOf(0, start);
  return { value: buffer.toString('utf8', start, end), next: end + 1 };
}
