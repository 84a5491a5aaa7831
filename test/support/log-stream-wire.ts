// GET /cloud/logs/stream on the wire: the data of each SSE message, as a client parses it.

/** One log event, with its times as ISO strings. */
export interface WireEvent {
  logStreamName: string;
  message: string;
  timestamp: string;
  ingestionTime: string;
  level: string;
}

/** The JSON of a message's `data:` line; `isFinal` on the last one before the server ends the stream. */
export interface Payload {
  events: WireEvent[];
  isFinal: boolean;
}

/** One SSE frame as the server wrote it. */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: any;
  comment?: string;
}

export interface SseReader {
  res: Response;
  /** Every frame read so far, comments included. */
  frames: SseFrame[];
  /** The next frame, or undefined once the server closed the stream. */
  next(timeoutMs?: number): Promise<SseFrame | undefined>;
  /** Reads messages until `count` events have arrived (or the final message, or the end); returns them. */
  events(count: number, timeoutMs?: number): Promise<WireEvent[]>;
  /** Data messages (frames with a `data:` line) read so far. */
  messages(): { id?: string; data: Payload }[];
  close(): void;
}

type Params = Record<string, string | number | boolean | string[] | undefined>;

export function streamQuery(params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    for (const x of [v].flat()) q.append(k, String(x));
  }
  return q.toString();
}

/** Opens GET /cloud/logs/stream with a plain fetch and parses SSE frames as they arrive. */
export async function openSse(
  baseUrl: string,
  token: string,
  params: Params,
  headers: Record<string, string> = {},
): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/cloud/logs/stream?${streamQuery(params)}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: abort.signal,
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let ended = false;
  const frames: SseFrame[] = [];

  const parse = (block: string): SseFrame => {
    const frame: SseFrame = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) frame.comment = line.slice(1).trim();
      else if (line.startsWith('id: ')) frame.id = line.slice(4);
      else if (line.startsWith('event: ')) frame.event = line.slice(7);
      else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
    }
    return frame;
  };

  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  async function next(timeoutMs = 10_000): Promise<SseFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const cut = buffer.indexOf('\n\n');
      if (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const frame = parse(block);
        frames.push(frame);
        return frame;
      }
      if (ended) return undefined;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE frame within ${timeoutMs} ms`);
      let timer: NodeJS.Timeout | undefined;
      // A read that outlives a timeout stays pending for the next call: its chunk must not be lost.
      pending ??= reader.read();
      const chunk = await Promise.race([
        pending,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no SSE frame within ${timeoutMs} ms`)), left);
        }),
      ]).finally(() => clearTimeout(timer));
      pending = undefined;
      if (chunk.done) ended = true;
      else buffer += decoder.decode(chunk.value, { stream: true });
    }
  }

  async function events(count: number, timeoutMs?: number): Promise<WireEvent[]> {
    const out: WireEvent[] = [];
    while (out.length < count) {
      const f = await next(timeoutMs);
      if (f === undefined) break;
      if (f.event === 'error') throw new Error(`event: error in the stream: ${JSON.stringify(f.data)}`);
      if (f.data === undefined) continue;
      out.push(...(f.data.events as WireEvent[]));
      if (f.data.isFinal) break;
    }
    return out;
  }

  return {
    res,
    frames,
    next,
    events,
    messages: () =>
      frames
        .filter((f) => f.data !== undefined && f.event === undefined)
        .map((f) => ({ id: f.id, data: f.data as Payload })),
    close: () => abort.abort(),
  };
}
