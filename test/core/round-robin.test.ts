import { describe, expect, it } from 'vitest';
import { RoundRobin } from '../../src/core/round-robin.js';

/** Queues by key behind a round, served one item a turn, as FairQueue and the PGlite worker use it. */
function queues() {
  const round = new RoundRobin<string>();
  const waiting = new Map<string, string[]>();
  return {
    round,
    add(item: string) {
      const key = item[0]!;
      const queue = waiting.get(key) ?? [];
      if (queue.length === 0) round.join(key);
      waiting.set(key, [...queue, item]);
    },
    take(eligible: (key: string) => boolean = () => true): string | undefined {
      const key = round.next((k) => (eligible(k) ? k : undefined));
      if (key === undefined) return undefined;
      const queue = waiting.get(key)!;
      const item = queue.shift();
      if (queue.length === 0) round.leave(key);
      return item;
    },
  };
}

describe('RoundRobin', () => {
  it('gives each key a turn in the order they joined, first come first served within a key', () => {
    const q = queues();
    for (const item of ['a1', 'a2', 'a3', 'b1', 'b2', 'c1']) q.add(item);
    const order = Array.from({ length: 6 }, () => q.take());
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
    expect(q.take()).toBeUndefined();
    expect(q.round.size).toBe(0);
  });

  it('puts a key that joins at the back of the round', () => {
    const q = queues();
    for (const item of ['a1', 'a2', 'b1', 'b2']) q.add(item);
    expect(q.take()).toBe('a1');
    q.add('c1');
    expect([q.take(), q.take(), q.take(), q.take()]).toEqual(['b1', 'a2', 'c1', 'b2']);
  });

  it('does not give a key two turns in a row while another waits', () => {
    const q = queues();
    q.add('a1');
    q.add('a2');
    expect(q.take()).toBe('a1');
    // a was alone as it took its turn: b, joining behind it, goes first.
    q.add('b1');
    expect(q.take()).toBe('b1');
    expect(q.take()).toBe('a2');
    // The same when a had left (its queue emptied) and joined again before b came.
    q.add('a3');
    q.add('b2');
    expect([q.take(), q.take()]).toEqual(['b2', 'a3']);
  });

  it('offers the turn to the next key when one cannot take it; both go to the back, the one passed over first', () => {
    const q = queues();
    for (const item of ['a1', 'a2', 'b1', 'b2', 'c1', 'c2']) q.add(item);
    expect(q.take((key) => key !== 'a')).toBe('b1');
    expect(q.round.has('a')).toBe(true);
    expect([q.take(), q.take(), q.take()]).toEqual(['c1', 'a1', 'b2']);
    // Nobody can take it: nothing changes.
    expect(q.take(() => false)).toBeUndefined();
    expect([q.take(), q.take()]).toEqual(['c2', 'a2']);
  });

  it('keeps the order of the others when a key leaves', () => {
    const round = new RoundRobin<string>();
    for (const key of ['a', 'b', 'c']) round.join(key);
    round.join('a');
    round.leave('b');
    expect(round.next((key) => key)).toBe('a');
    expect(round.next((key) => key)).toBe('c');
    expect(round.next((key) => key)).toBe('a');
  });

  it('keeps the place of a parked key, passed by without moving, until it joins again', () => {
    const round = new RoundRobin<string>();
    for (const key of ['a', 'b', 'c']) round.join(key);
    round.park('a', Date.now() + 60_000);
    expect({ size: round.size, hasA: round.has('a') }).toEqual({ size: 2, hasA: false });
    const offered: string[] = [];
    expect(round.next((key) => (offered.push(key), key))).toBe('b');
    expect(offered).toEqual(['b']);
    // Back before its time: where it was, ahead of c and b.
    round.join('a');
    expect([round.next((k) => k), round.next((k) => k), round.next((k) => k)]).toEqual(['a', 'c', 'b']);
    // Leaving instead: at the back when it joins again.
    round.leave('a');
    round.join('a');
    expect([round.next((k) => k), round.next((k) => k), round.next((k) => k)]).toEqual(['c', 'b', 'a']);
  });

  it('lets a parked key go once its time has passed: joining later puts it at the back', () => {
    const round = new RoundRobin<string>();
    for (const key of ['a', 'b', 'c']) round.join(key);
    round.park('a', Date.now() - 1);
    expect(round.next((k) => k)).toBe('b');
    round.join('a');
    expect([round.next((k) => k), round.next((k) => k), round.next((k) => k)]).toEqual(['c', 'b', 'a']);
  });

  it('does not park a key that is not in the round', () => {
    const round = new RoundRobin<string>();
    round.park('a', Date.now() + 60_000);
    expect(round.size).toBe(0);
    round.join('b');
    round.join('a');
    expect([round.next((k) => k), round.next((k) => k)]).toEqual(['b', 'a']);
  });
});
