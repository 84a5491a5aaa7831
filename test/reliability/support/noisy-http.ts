// HTTP as the noisy-neighbour test's clients speak it: node:http with keep-alive agents bound to a client address of
// their own on the loopback (B at 127.0.0.1, A at 127.0.0.2, A's random-token flood at 127.0.0.3), so limits kept per
// client address tell them apart as they would tell apart clients on different hosts. Loopback only.
import http from 'node:http';

export const ADDRESS = { quiet: '127.0.0.1', noisy: '127.0.0.2', flood: '127.0.0.3' } as const;

/** A keep-alive agent whose connections leave from `localAddress`; `sockets` at most at once. */
export function clientAgent(localAddress: string, sockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: sockets, localAddress } as http.AgentOptions);
}

export interface Exchange {
  /** 0 when no response came (connection error or timeout). */
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
  /** From sending the request to the last byte of the body. */
  ms: number;
  /** Set when no complete response came: 'timeout' or the connection error. */
  error?: string;
  /** Whether the request went out on a connection the agent had used before. */
  reused: boolean;
}

export interface ExchangeOptions {
  method?: string;
  token?: string;
  body?: string;
  agent: http.Agent;
  /** The client gives up after this long and reports `error: 'timeout'`. */
  timeoutMs: number;
  headers?: Record<string, string>;
}

function checkLoopback(url: URL): void {
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost')
    throw new Error(`the noisy-neighbour clients only reach loopback, not ${url.hostname}`);
}

/** One request, its whole body read; never rejects. */
export function exchange(baseUrl: string, path: string, opts: ExchangeOptions): Promise<Exchange> {
  const url = new URL(path, baseUrl);
  checkLoopback(url);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(opts.body));
  }
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    let reused = false;
    const done = (result: Omit<Exchange, 'ms' | 'reused'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, ms: performance.now() - started, reused });
    };
    const req = http.request(url, { method: opts.method ?? 'GET', headers, agent: opts.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
      );
      res.on('error', (e) => done({ status: 0, body: '', headers: {}, error: e.message }));
    });
    req.on('socket', (socket) => {
      reused = (socket as { _noisyUsed?: boolean })._noisyUsed === true;
      (socket as { _noisyUsed?: boolean })._noisyUsed = true;
    });
    const timer = setTimeout(() => {
      done({ status: 0, body: '', headers: {}, error: 'timeout' });
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (e) => done({ status: 0, body: '', headers: {}, error: e.message }));
    req.end(opts.body);
  });
}

export interface StreamOutcome {
  /** 0 when no response head came. */
  status: number;
  /** Until the response head. */
  headMs: number;
  /** Until the first data message with events (undefined: none came). */
  firstEventsMs?: number;
  events: number;
  messages: number;
  /** An `event: error` frame came (after the start). */
  errorFrames: number;
  final: boolean;
  /** The error body of a refusal (non-200), and its Retry-After header. */
  body: string;
  retryAfter?: string;
  error?: string;
}

export interface HistoryStream {
  /** Resolves once the head came (or the head deadline passed) and, on 200, the first events did or their deadline. */
  started: Promise<StreamOutcome>;
  /** Stops reading and closes the connection; the outcome so far. */
  close(): StreamOutcome;
}

/**
 * GET a log stream and read it as a slow client would: `slow` reads one chunk then pauses `pauseMs` before the next;
 * `stalled` reads until the first events then never reads again (the server's writes back up into TCP buffers).
 */
export function openHistoryStream(
  baseUrl: string,
  path: string,
  opts: { token: string; agent: http.Agent; mode: 'slow' | 'stalled'; pauseMs: number; deadlineMs: number },
): HistoryStream {
  const url = new URL(path, baseUrl);
  checkLoopback(url);
  const outcome: StreamOutcome = {
    status: 0,
    headMs: 0,
    events: 0,
    messages: 0,
    errorFrames: 0,
    final: false,
    body: '',
  };
  const started = performance.now();
  let resolveStarted!: (o: StreamOutcome) => void;
  const startedPromise = new Promise<StreamOutcome>((r) => (resolveStarted = r));
  let announced = false;
  const announce = () => {
    if (announced) return;
    announced = true;
    clearTimeout(deadline);
    resolveStarted({ ...outcome });
  };
  const deadline = setTimeout(() => {
    outcome.error ??= outcome.status === 0 ? 'no response head' : 'no events';
    announce();
  }, opts.deadlineMs);
  let buffer = '';
  const onFrame = (block: string) => {
    let event: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (data === undefined) return;
    if (event === 'error') {
      outcome.errorFrames += 1;
      return;
    }
    const payload = JSON.parse(data) as { events: unknown[]; isFinal: boolean };
    outcome.messages += 1;
    outcome.events += payload.events.length;
    if (payload.isFinal) outcome.final = true;
    if (payload.events.length > 0 && outcome.firstEventsMs === undefined) {
      outcome.firstEventsMs = performance.now() - started;
      announce();
    }
  };
  let res: http.IncomingMessage | undefined;
  const req = http.request(
    url,
    { headers: { authorization: `Bearer ${opts.token}`, accept: 'text/event-stream' }, agent: opts.agent },
    (response) => {
      res = response;
      outcome.status = response.statusCode ?? 0;
      outcome.headMs = performance.now() - started;
      const retryAfter = response.headers['retry-after'];
      if (typeof retryAfter === 'string') outcome.retryAfter = retryAfter;
      response.setEncoding('utf8');
      if (outcome.status !== 200) {
        response.on('data', (c: string) => (outcome.body += c));
        response.on('end', announce);
        return;
      }
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          onFrame(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          cut = buffer.indexOf('\n\n');
        }
        if (opts.mode === 'stalled' && outcome.firstEventsMs !== undefined) response.pause();
        else if (opts.mode === 'slow') {
          response.pause();
          setTimeout(() => response.resume(), opts.pauseMs).unref();
        }
      });
      response.on('end', announce);
      response.on('error', (e) => {
        outcome.error ??= e.message;
        announce();
      });
    },
  );
  req.on('error', (e) => {
    outcome.error ??= e.message;
    announce();
  });
  req.end();
  return {
    started: startedPromise,
    close() {
      clearTimeout(deadline);
      res?.destroy();
      req.destroy();
      announce();
      return { ...outcome };
    },
  };
}
