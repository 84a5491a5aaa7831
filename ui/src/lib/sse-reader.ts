// Server-sent events read from a fetch() response (EventSource cannot send a bearer header). The parsing is
// eventsource-parser's (WHATWG field grammar, CR/LF/CRLF, lines split across chunks); this file adds the
// byte-to-text step, the stream's lifetime and a bound on what one event may buffer.
import { createParser, type EventSourceParser, type ParseError } from 'eventsource-parser';

/** One dispatched event: `id` only when its block had an `id:` field, `event` only when it had an `event:` one. */
export interface SseMessage {
  id?: string | undefined;
  event?: string | undefined;
  data: string;
}

export interface SseCallbacks {
  onEvent(message: SseMessage): void;
  /** A valid `retry:` field: the server's reconnection time in milliseconds. */
  onRetry?(ms: number): void;
  /** A comment line, without its `:` (and one leading space), e.g. `keep-alive`. */
  onComment?(text: string): void;
}

export interface SseReadOptions extends Omit<SseCallbacks, 'onEvent'> {
  /** Characters one unfinished line or event may hold before the read fails with SseTooLargeError. */
  maxBufferSize?: number;
}

/** 32 Mi characters: far above any event Berth sends (an event's message is at most 1 MiB). */
export const DEFAULT_MAX_BUFFER = 32 * 1024 * 1024;

/** An event (or line) grew past `maxBufferSize`: the stream is not one to keep reading. */
export class SseTooLargeError extends Error {
  constructor(limit: number) {
    super(`A server-sent event exceeded ${limit} characters`);
    this.name = 'SseTooLargeError';
  }
}

/**
 * An incremental parser over text chunks cut anywhere; an event is dispatched as soon as its blank line is in
 * (also when that line ends with a CR that is the chunk's last character). A U+FEFF at the very start of the stream is dropped
 * (readSse's decoder already drops a UTF-8 BOM; this covers text fed directly). Unknown fields and invalid
 * `retry:` values are ignored, as the standard says.
 */
export function createSseParser(callbacks: SseCallbacks & { onTooLarge?: () => void; maxBufferSize?: number }): {
  feed(chunk: string): void;
  reset(): void;
} {
  let started = false;
  // A chunk ending in CR ends a line at once (eventsource-parser would wait for a possible LF); an LF that then
  // starts the next chunk is the rest of that CRLF and is dropped.
  let afterCr = false;
  const parser: EventSourceParser = createParser({
    onEvent: (m) => callbacks.onEvent(m),
    onRetry: callbacks.onRetry,
    onComment: callbacks.onComment,
    maxBufferSize: callbacks.maxBufferSize,
    onError: (error: ParseError) => {
      if (error.type === 'max-buffer-size-exceeded') callbacks.onTooLarge?.();
    },
  });
  return {
    feed(chunk: string) {
      if (chunk === '') return;
      if (!started) {
        started = true;
        if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
      }
      if (afterCr && chunk.charCodeAt(0) === 0x0a) {
        afterCr = false;
        chunk = chunk.slice(1);
        if (chunk === '') return;
      }
      afterCr = chunk.charCodeAt(chunk.length - 1) === 0x0d;
      parser.feed(afterCr ? `${chunk}\n` : chunk);
    },
    reset() {
      started = false;
      afterCr = false;
      parser.reset();
    },
  };
}

/**
 * Reads `response.body` as an event stream, calling `onEvent` for each event as it completes. Resolves when
 * the server ends the body (an unfinished last event is dropped, as the standard says); rejects when the
 * connection fails, when `signal` aborts (with the signal's reason), or with SseTooLargeError.
 */
export async function readSse(
  response: Response,
  onEvent: (message: SseMessage) => void,
  signal?: AbortSignal,
  options: SseReadOptions = {},
): Promise<void> {
  if (response.body === null) return;
  const limit = options.maxBufferSize ?? DEFAULT_MAX_BUFFER;
  let tooLarge = false;
  const parser = createSseParser({
    // Nothing is dispatched once the caller aborted, not even the rest of the chunk in hand.
    onEvent: (message) => {
      if (signal?.aborted !== true) onEvent(message);
    },
    onRetry: options.onRetry,
    onComment: options.onComment,
    maxBufferSize: limit,
    onTooLarge: () => {
      tooLarge = true;
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let ended = false;
  const cancel = () => {
    if (!ended) reader.cancel(signal?.reason).catch(() => undefined);
  };
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      if (done) {
        ended = true;
        return;
      }
      parser.feed(value);
      if (tooLarge) throw new SseTooLargeError(limit);
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    // Released on every way out (abort, a failed read, too large): the connection does not stay open.
    cancel();
  }
}
