// The live window of a tail key: events known by content, copies counted as a multiset whose every source
// (a complete FilterLogEvents read, a Live Tail session) gives a lower bound, so the window never holds an event
// twice, and a fill after any seam brings it back to exactly what was written.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberCopies, type RawTailEvent, TailWindow, tailEventHash } from '../../src/core/tail-window.js';

const ev = (message: string, timestamp = 1_000, stream = 's', ingestionTime = timestamp): RawTailEvent => ({
  logGroup: 'g',
  logStreamName: stream,
  message,
  timestamp,
  ingestionTime,
});

describe('tail event identity', () => {
  it('is the content: group, stream, timestamp, ingestion time and message', () => {
    const base = tailEventHash(ev('a'));
    expect(tailEventHash(ev('a'))).toBe(base);
    expect(tailEventHash({ ...ev('a'), logGroup: 'h' })).not.toBe(base);
    expect(tailEventHash(ev('a', 1_000, 't'))).not.toBe(base);
    expect(tailEventHash(ev('a', 1_001, 's', 1_000))).not.toBe(base);
    expect(tailEventHash(ev('a', 1_000, 's', 1_001))).not.toBe(base);
    expect(tailEventHash(ev('b'))).not.toBe(base);
    expect(base).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it('numbers identical copies within one complete read', () => {
    const [a, b, c] = numberCopies([ev('x'), ev('y'), ev('x')]);
    const hx = tailEventHash(ev('x'));
    expect(a!.eventId).toBe(`${hx}.0`);
    expect(b!.eventId).toBe(`${tailEventHash(ev('y'))}.0`);
    expect(c!.eventId).toBe(`${hx}.1`);
  });
});

describe('TailWindow', () => {
  it('adds what a fill finds once; a live event the fill already had is not added again', () => {
    const w = new TailWindow();
    const session = w.session();
    expect(w.fill([ev('a', 1), ev('b', 2)]).map((e) => e.message)).toEqual(['a', 'b']);
    // b was ingested after the session began, so the session delivers it too.
    expect(w.live(session, [ev('b', 2)])).toEqual([]);
    expect(w.live(session, [ev('c', 3)]).map((e) => e.message)).toEqual(['c']);
    expect(w.fill([ev('a', 1), ev('b', 2), ev('c', 3)])).toEqual([]);
    expect(w.since(0).map((e) => e.message)).toEqual(['a', 'b', 'c']);
  });

  it('keeps identical events apart by their count', () => {
    const w = new TailWindow();
    w.fill([ev('x')]);
    const session = w.session();
    // A second copy written after the session began: the session's count adds to what the window knew.
    const added = w.live(session, [ev('x')]);
    expect(added.map((e) => e.eventId)).toEqual([`${tailEventHash(ev('x'))}.1`]);
    expect(w.fill([ev('x'), ev('x')])).toEqual([]);
    expect(w.fill([ev('x'), ev('x'), ev('x')]).map((e) => e.eventId)).toEqual([`${tailEventHash(ev('x'))}.2`]);
    expect(w.size).toBe(3);
  });

  it('applies events published by another replica once, and learns their counts', () => {
    const holder = new TailWindow();
    const published = holder.fill([ev('x'), ev('x'), ev('y', 5)]);
    const follower = new TailWindow();
    expect(follower.apply(published)).toHaveLength(3);
    expect(follower.apply(published)).toEqual([]);
    // Taking over, the follower counts from what it received: a fill of the same writes adds nothing.
    expect(follower.fill([ev('x'), ev('y', 5), ev('x')])).toEqual([]);
  });

  it('prunes before a horizon and vouches for nothing before it', () => {
    const w = new TailWindow();
    w.fill([ev('a', 10), ev('b', 20), ev('c', 30)]);
    w.complete = 10;
    w.prune(20);
    expect(w.since(0).map((e) => e.message)).toEqual(['b', 'c']);
    expect(w.complete).toBe(20);
    expect(w.has(numberCopies([ev('a', 10)])[0]!.eventId)).toBe(false);
    const fresh = new TailWindow();
    fresh.prune(100);
    expect(fresh.complete).toBe(Number.POSITIVE_INFINITY);
  });

  it('answers events from a time on, oldest first, whatever order they came in', () => {
    const w = new TailWindow();
    w.fill([ev('c', 30), ev('a', 10)]);
    w.apply(numberCopies([ev('b', 20)]).map((e) => ({ ...e, level: 'INFO' })));
    expect(w.since(15).map((e) => e.message)).toEqual(['b', 'c']);
    expect(w.since(31)).toEqual([]);
  });

  it('never holds more copies than were written, and a fill after the last seam makes it exact', () => {
    type Step = { kind: 'write'; content: number } | { kind: 'fill' } | { kind: 'reconnect' } | { kind: 'live' };
    const step = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), content: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('fill' as const) }),
      fc.record({ kind: fc.constant('reconnect' as const) }),
      fc.record({ kind: fc.constant('live' as const) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps: Step[]) => {
        const w = new TailWindow();
        const written: RawTailEvent[] = [];
        // What the current session has yet to deliver (written after it began), and whether one is open.
        let undelivered: RawTailEvent[] = [];
        let session = w.session();
        const check = () => {
          const counts = new Map<string, number>();
          for (const e of written) counts.set(tailEventHash(e), (counts.get(tailEventHash(e)) ?? 0) + 1);
          const held = new Map<string, number>();
          for (const e of w.since(0)) held.set(tailEventHash(e), (held.get(tailEventHash(e)) ?? 0) + 1);
          for (const [hash, n] of held) expect(n).toBeLessThanOrEqual(counts.get(hash) ?? 0);
          return { counts, held };
        };
        for (const s of steps) {
          if (s.kind === 'write') {
            const e = ev(`m${s.content}`);
            written.push(e);
            undelivered.push(e);
          } else if (s.kind === 'live') {
            w.live(session, undelivered.splice(0, 1));
          } else if (s.kind === 'reconnect') {
            // The old session's undelivered events are lost with it; the new one starts from now.
            undelivered = [];
            session = w.session();
          } else w.fill([...written]);
          check();
        }
        w.fill([...written]);
        const { counts, held } = check();
        expect(held).toEqual(counts);
      }),
      { numRuns: 300 },
    );
  });
});
