// The SSE reader of the log explorer: the WHATWG event-stream grammar over text and bytes cut anywhere.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSseParser, readSse, type SseMessage, SseTooLargeError } from '../../ui/src/lib/sse-reader.js';

interface Parsed {
  events: SseMessage[];
  retries: number[];
  comments: string[];
}

function parseAll(chunks: string[]): Parsed {
  const out: Parsed = { events: [], retries: [], comments: [] };
  const parser = createSseParser({
    onEvent: (m) => out.events.push({ ...m }),
    onRetry: (ms) => out.retries.push(ms),
    onComment: (c) => out.comments.push(c),
  });
  for (const c of chunks) parser.feed(c);
  return out;
}

const bodyOf = (chunks: Uint8Array[]): Response =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    }),
  );

/** Cuts `whole` at the given (sorted, deduplicated) positions. */
function cut<T extends { slice(a: number, b?: number): T; length: number }>(whole: T, at: number[]): T[] {
  const points = [...new Set(at.map((p) => p % (whole.length + 1)))].sort((a, b) => a - b);
  const parts: T[] = [];
  let from = 0;
  for (const p of points) {
    parts.push(whole.slice(from, p));
    from = p;
  }
  parts.push(whole.slice(from));
  return parts;
}

describe('createSseParser', () => {
  it('reads id, event, data, retry and comments, as Berth frames them', () => {
    const text =
      ': keep-alive\n\nid: abc\ndata: {"events":[],"isFinal":false}\n\n' +
      'event: error\ndata: {"code":"x"}\n\nretry: 2500\n\nid: def\ndata: {"isFinal":true}\n\n';
    const p = parseAll([text]);
    expect(p.comments).toEqual(['keep-alive']);
    expect(p.retries).toEqual([2500]);
    expect(p.events).toEqual([
      { id: 'abc', event: undefined, data: '{"events":[],"isFinal":false}' },
      { id: undefined, event: 'error', data: '{"code":"x"}' },
      { id: 'def', event: undefined, data: '{"isFinal":true}' },
    ]);
  });

  it('joins multi-line data with LF, takes CR, LF and CRLF as line ends, and ignores what the standard ignores', () => {
    const p = parseAll([
      'data: one\r\ndata:two\rdata:  three\n\r\n',
      'data\n\n',
      'retry: soon\nfoo: bar\ndata: x\n\n',
      'data: unfinished',
    ]);
    expect(p.events.map((e) => e.data)).toEqual(['one\ntwo\n three', '', 'x']);
    expect(p.retries).toEqual([]);
  });

  it('drops a U+FEFF at the start of the stream only', () => {
    const p = parseAll(['', '\uFEFFdata: a\n\n', '\uFEFFdata: b\n\n']);
    expect(p.events.map((e) => e.data)).toEqual(['a']);
  });

  it('an id with NUL is ignored; an empty id: is kept as the empty string', () => {
    const p = parseAll(['id: a\0b\ndata: 1\n\nid\ndata: 2\n\n']);
    expect(p.events.map((e) => e.id)).toEqual([undefined, '']);
  });

  const line = fc.stringMatching(/^[^\r\n]{0,12}$/);
  const message = fc.record({
    id: fc.option(fc.stringMatching(/^[^\r\n\0]{0,8}$/), { nil: undefined }),
    event: fc.option(fc.stringMatching(/^[a-z]{1,6}$/), { nil: undefined }),
    data: fc.array(line, { minLength: 1, maxLength: 3 }),
    comment: fc.option(line, { nil: undefined }),
  });
  const eol = fc.constantFrom('\n', '\r', '\r\n');

  it('parses the same events however the text is cut and whichever line ends it uses (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(message, eol), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (messages, at) => {
          let text = '';
          for (const [m, nl] of messages) {
            if (m.comment !== undefined) text += `:${m.comment}${nl}`;
            if (m.id !== undefined) text += `id: ${m.id}${nl}`;
            if (m.event !== undefined) text += `event:${m.event}${nl}`;
            for (const d of m.data) text += `data: ${d}${nl}`;
            text += nl;
          }
          const whole = parseAll([text]);
          const pieces = parseAll(cut(text, at));
          expect(pieces).toEqual(whole);
          expect(whole.events).toEqual(messages.map(([m]) => ({ id: m.id, event: m.event, data: m.data.join('\n') })));
          expect(whole.comments).toEqual(
            messages.flatMap(([m]) => (m.comment === undefined ? [] : [m.comment.replace(/^ /, '')])),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('readSse', () => {
  const enc = new TextEncoder();

  it('decodes UTF-8 cut inside a character, drops a BOM, and resolves at the end of the body (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 10 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (datas, at) => {
          const clean = datas.map((d) => d.replace(/[\r\n]/g, ''));
          const bytes = enc.encode(`\uFEFF${clean.map((d, i) => `id: ${i}\ndata: ${d}\n\n`).join('')}`);
          const got: SseMessage[] = [];
          await readSse(bodyOf(cut(bytes, at)), (m) => got.push(m));
          expect(got).toEqual(clean.map((d, i) => ({ id: String(i), event: undefined, data: d })));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('rejects when the connection fails mid-stream, after the events before it', async () => {
    const got: string[] = [];
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(enc.encode('data: before\n\ndata: cut'));
        else controller.error(new TypeError('terminated'));
      },
    });
    await expect(readSse(new Response(body), (m) => got.push(m.data))).rejects.toThrow('terminated');
    expect(got).toEqual(['before']);
  });

  it('stops at an abort, with the abort reason, dispatching nothing more and cancelling the body', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(enc.encode('data: 1\n\ndata: 2\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const abort = new AbortController();
    const got: string[] = [];
    const reading = readSse(
      new Response(body),
      (m) => {
        got.push(m.data);
        abort.abort(new Error('paused'));
      },
      abort.signal,
    );
    await expect(reading).rejects.toThrow('paused');
    expect(got).toEqual(['1']);
    expect(cancelled).toBe(true);
  });

  it('rejects with SseTooLargeError when one event outgrows maxBufferSize, and not before', async () => {
    const ok: string[] = [];
    await readSse(bodyOf([enc.encode(`data: ${'a'.repeat(90)}\n\n`)]), (m) => ok.push(m.data), undefined, {
      maxBufferSize: 100,
    });
    expect(ok).toHaveLength(1);
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(enc.encode('x'.repeat(64)));
      },
    });
    await expect(readSse(new Response(endless), () => undefined, undefined, { maxBufferSize: 1000 })).rejects.toThrow(
      SseTooLargeError,
    );
  });
});
