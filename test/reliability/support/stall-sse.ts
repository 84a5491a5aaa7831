// A log-stream client for the stall tests: reads every frame of `GET /cloud/logs/stream` (events, `event: error` with
// its error object, the final message) and times the head and the end. Loopback only, like noisy-http.ts.
import http from 'node:http';

export interface SseEvent {
  logStreamName: string;
  message: string;
  timestamp: number;
}

export interface SseOutcome {
  /** 0 when no response head came. */
  status: number;
  /** Until the response head (undefined: none yet). */
  headMs?: number;
  /** Until the final message (`isFinal: true`). */
  finalMs?: number;
  /** Until the connection ended (the server closed it, or it failed). */
  endMs?: number;
  events: SseEvent[];
  /** Codes of the `event: error` frames, in order; and how many data messages came after the last one. */
  errorCodes: string[];
  messagesAfterError: number;
  final: boolean;
  /** Data messages after the final one (there must be none). */
  afterFinal: number;
  /** Frames that were not what the spec says (not JSON, wrong shape). */
  malformed: string[];
  /** The body of a refusal (non-200) and its Retry-After header. */
  body: string;
  retryAfter?: string;
  error?: string;
}

export interface SseStream {
  /** Resolves at the response head (or a failure before it). */
  head: Promise<SseOutcome>;
  /** Resolves when the connection ends (after the final message, a failure, or `close`). */
  ended: Promise<SseOutcome>;
  /** What came so far. */
  now(): SseOutcome;
  /** Closes the connection from the client's side; what came before it. */
  close(): SseOutcome;
}

export function openStream(
  baseUrl: string,
  path: string,
  opts: { token: string; agent: http.Agent; onEvent?: (e: SseEvent, atMs: number) => void },
): SseStream {
  const url = new URL(path, baseUrl);
  if (url.hostname !== '127.0.0.1') throw new Error(`stall streams only reach loopback, not ${url.hostname}`);
  const o: SseOutcome = {
    status: 0,
    events: [],
    errorCodes: [],
    messagesAfterError: 0,
    final: false,
    afterFinal: 0,
    malformed: [],
    body: '',
  };
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  let resolveHead!: (o: SseOutcome) => void;
  const head = new Promise<SseOutcome>((r) => (resolveHead = r));
  let resolveEnded!: (o: SseOutcome) => void;
  const ended = new Promise<SseOutcome>((r) => (resolveEnded = r));
  const end = (error?: string) => {
    if (o.endMs !== undefined) return;
    if (error !== undefined) o.error ??= error;
    o.endMs = elapsed();
    resolveHead({ ...o });
    resolveEnded({ ...o, events: [...o.events], errorCodes: [...o.errorCodes] });
  };
  const onFrame = (block: string) => {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
    if (data.length === 0) return; // a comment (keep-alive) or an id alone
    let payload: unknown;
    try {
      payload = JSON.parse(data.join('\n'));
    } catch {
      o.malformed.push(`not JSON: ${data.join('\n').slice(0, 120)}`);
      return;
    }
    if (event === 'error') {
      const code = (payload as { code?: unknown }).code;
      o.errorCodes.push(typeof code === 'string' ? code : '(no code)');
      o.messagesAfterError = 0;
      return;
    }
    const message = payload as { events?: unknown; isFinal?: unknown };
    if (!Array.isArray(message.events) || typeof message.isFinal !== 'boolean') {
      o.malformed.push(`not {events, isFinal}: ${data.join('\n').slice(0, 120)}`);
      return;
    }
    if (o.final) o.afterFinal += 1;
    if (o.errorCodes.length > 0) o.messagesAfterError += 1;
    for (const e of message.events as SseEvent[]) {
      o.events.push(e);
      opts.onEvent?.(e, elapsed());
    }
    if (message.isFinal && !o.final) {
      o.final = true;
      o.finalMs = elapsed();
    }
  };
  let res: http.IncomingMessage | undefined;
  const req = http.request(
    url,
    { headers: { authorization: `Bearer ${opts.token}`, accept: 'text/event-stream' }, agent: opts.agent },
    (response) => {
      res = response;
      o.status = response.statusCode ?? 0;
      o.headMs = elapsed();
      const retryAfter = response.headers['retry-after'];
      if (typeof retryAfter === 'string') o.retryAfter = retryAfter;
      response.setEncoding('utf8');
      if (o.status !== 200) {
        response.on('data', (c: string) => (o.body += c));
      } else {
        resolveHead({ ...o });
        let buffer = '';
        response.on('data', (chunk: string) => {
          buffer += chunk.replace(/\r\n?/g, '\n');
          let cut = buffer.indexOf('\n\n');
          while (cut >= 0) {
            onFrame(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
            cut = buffer.indexOf('\n\n');
          }
        });
      }
      response.on('end', () => end());
      response.on('error', (e) => end(e.message));
      response.on('close', () => end(o.final || o.status !== 200 ? undefined : 'closed before the final message'));
    },
  );
  req.on('error', (e) => end(e.message));
  req.end();
  return {
    head,
    ended,
    now: () => ({ ...o, events: [...o.events], errorCodes: [...o.errorCodes] }),
    close() {
      const snapshot = { ...o, events: [...o.events], errorCodes: [...o.errorCodes] };
      res?.destroy();
      req.destroy();
      end('closed by the client');
      return snapshot;
    },
  };
}
