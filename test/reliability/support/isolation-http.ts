// One request of the isolation matrix and what came back, reduced to what the matrix compares.
import type { RequestOptions, TestResponse } from '../../support/http-request.js';

/** Anything that sends a request to a Berth process (`Berth` of berth-process.ts). */
export interface Http {
  /** Berth's base URL: a cookie-authenticated write is sent from its origin. */
  url?: string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
}

export interface Probe {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** One server-sent message as a client reads it. */
export interface SseMessage {
  id?: string;
  event?: string;
  data?: any;
}

export interface Outcome {
  status: number;
  headers: Headers;
  contentType: string;
  /** The parsed JSON body (undefined for an event stream or a non-JSON body). */
  body: any;
  text: string;
  /** Set for a `text/event-stream` answer. */
  messages?: SseMessage[];
}

export function parseSse(text: string): SseMessage[] {
  const out: SseMessage[] = [];
  for (const block of text.split('\n\n')) {
    const message: SseMessage = {};
    let any = false;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) (message.id = line.slice(4)), (any = true);
      else if (line.startsWith('event: ')) (message.event = line.slice(7)), (any = true);
      else if (line.startsWith('data: ')) (message.data = JSON.parse(line.slice(6))), (any = true);
    }
    if (any) out.push(message);
  }
  return out;
}

/** How a request authenticates: an `Authorization` header value, or a session cookie (sent from Berth's origin). */
export type Credential = string | { cookie: string } | undefined;

export async function send(http: Http, credential: Credential, probe: Probe): Promise<Outcome> {
  const headers: Record<string, string> = { ...probe.headers };
  if (typeof credential === 'string') headers.authorization = credential;
  else if (credential !== undefined) {
    headers.cookie = credential.cookie;
    if (http.url !== undefined) headers.origin = new URL(http.url).origin;
  }
  const res = await http.request(probe.method, probe.path, {
    headers,
    ...(probe.body === undefined ? {} : { body: probe.body }),
  });
  const contentType = res.headers.get('content-type') ?? '';
  const outcome: Outcome = { status: res.status, headers: res.headers, contentType, body: res.body, text: res.text };
  if (contentType.startsWith('text/event-stream')) outcome.messages = parseSse(res.text);
  return outcome;
}

/** The error code of an answer: the body's, or that of an `event: error` inside a stream. */
export function errorCode(o: Outcome): string | undefined {
  if (o.messages !== undefined) return o.messages.find((m) => m.event === 'error')?.data?.code;
  return o.status >= 400 && typeof o.body?.code === 'string' ? o.body.code : undefined;
}

/** A matrix cell: `200`, `404 logs:environment:not-found`, or `200, then event: error <code>` for a failed stream. */
export function cell(o: Outcome): string {
  const code = errorCode(o);
  if (code === undefined) return String(o.status);
  return o.status >= 400 ? `${o.status} ${code}` : `${o.status}, then event: error ${code}`;
}

/** The log messages an event stream delivered. */
export function streamedMessages(o: Outcome): string[] {
  return (o.messages ?? []).flatMap((m) =>
    Array.isArray(m.data?.events) ? m.data.events.map((e: { message: string }) => e.message) : [],
  );
}

const PLACEHOLDER = '<id>';

/**
 * An error body as two answers are compared: without `requestId`, and with every id the request named
 * replaced by a placeholder (another organization's id and a made-up one then read the same).
 */
export function comparable(body: unknown, ids: string[]): unknown {
  const fragments = [...new Set(ids.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return fragments.reduce((s, f) => s.split(f).join(PLACEHOLDER), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v)
          .filter(([k]) => k !== 'requestId')
          .map(([k, x]) => [k, walk(x)]),
      );
    }
    return v;
  };
  return walk(body);
}
