// Load for sigterm.test.ts: workers that keep sending one kind of request, recording when each was
// sent, when it ended, and how (a status, or the connection-level error that ended it).
import { openSse, type SseReader } from '../../support/log-stream-wire.js';

export interface Outcome {
  kind: string;
  /** Names what the request writes (a category's givenId, an ingest's messages), to look for it afterwards. */
  tag: number;
  sentAt: number;
  endedAt: number;
  status?: number;
  /** The connection-level failure (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET, …). */
  error?: string;
  body?: any;
}

export interface RequestSpec {
  kind: string;
  method: string;
  path: string;
  token: string;
  body: (tag: number) => unknown;
  /** The status of a normal answer. */
  expected: number;
}

function errorCode(error: unknown): string {
  const e = error as { cause?: { code?: string; message?: string }; code?: string; message?: string };
  return e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? String(error);
}

let tags = 0;

/** Sends `spec` again and again until `stop()` holds, recording every outcome. */
export async function worker(
  url: () => string,
  spec: RequestSpec,
  outcomes: Outcome[],
  stop: () => boolean,
): Promise<void> {
  while (!stop()) {
    const sentAt = Date.now();
    const tag = ++tags;
    const outcome: Outcome = { kind: spec.kind, tag, sentAt, endedAt: 0 };
    try {
      const res = await fetch(`${url()}${spec.path}`, {
        method: spec.method,
        headers: { authorization: `Bearer ${spec.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(spec.body(tag)),
      });
      outcome.status = res.status;
      const text = await res.text();
      try {
        outcome.body = JSON.parse(text);
      } catch {
        outcome.body = text;
      }
    } catch (error) {
      outcome.error = errorCode(error);
      // Refused: nothing listens any more; wait a little rather than spin.
      await new Promise((r) => setTimeout(r, 20));
    }
    outcome.endedAt = Date.now();
    outcomes.push(outcome);
  }
}

export interface StreamOutcome {
  frames: number;
  /** The data of the last message, and whether the server then ended the response. */
  last?: { events: unknown[]; isFinal: boolean };
  lastEvent?: string;
  ended: boolean;
  error?: string;
}

/** Opens a tailing stream and reads it to its end in the background. */
export async function tailingStream(
  url: string,
  token: string,
  params: Record<string, string>,
): Promise<{ reader: SseReader; done: Promise<StreamOutcome> }> {
  const reader = await openSse(url, token, params);
  if (reader.res.status !== 200) throw new Error(`the stream answered ${reader.res.status}`);
  const done = (async (): Promise<StreamOutcome> => {
    const out: StreamOutcome = { frames: 0, ended: false };
    try {
      for (;;) {
        const frame = await reader.next(60_000);
        if (frame === undefined) {
          out.ended = true;
          return out;
        }
        if (frame.data === undefined) continue;
        out.frames++;
        out.last = frame.data;
        out.lastEvent = frame.event;
      }
    } catch (error) {
      out.error = errorCode(error);
      return out;
    }
  })();
  return { reader, done };
}

/** Connection-level failures that mean "nobody answers on this port any more", not a server error. */
export const REFUSALS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'UND_ERR_SOCKET',
  'EPIPE',
  'UND_ERR_CLOSED',
  'other side closed',
]);
