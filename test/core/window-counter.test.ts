import { describe, expect, it } from 'vitest';
import { WindowCounter } from '../../src/core/window-counter.js';

describe('WindowCounter', () => {
  it('counts per key within a window that opens with the first event', () => {
    const counter = new WindowCounter(1_000);
    expect(counter.add('a', 0)).toBe(1);
    expect(counter.add('a', 500)).toBe(2);
    expect(counter.add('b', 500)).toBe(1);
    expect(counter.count('a', 999)).toBe(2);
    expect(counter.remainingMs('a', 400)).toBe(600);
  });

  it('starts again once the window has passed', () => {
    const counter = new WindowCounter(1_000);
    counter.add('a', 0);
    counter.add('a', 10);
    expect(counter.count('a', 1_000)).toBe(0);
    expect(counter.remainingMs('a', 1_000)).toBe(0);
    expect(counter.add('a', 1_000)).toBe(1);
  });

  it('forgets the least recently counted keys past its bound', () => {
    const counter = new WindowCounter(60_000, 2);
    counter.add('a', 0);
    counter.add('b', 0);
    counter.add('c', 0);
    expect(counter.count('a', 1)).toBe(0);
    expect(counter.count('c', 1)).toBe(1);
  });

  it('deletes a key', () => {
    const counter = new WindowCounter(60_000);
    counter.add('a', 0);
    counter.delete('a');
    expect(counter.count('a', 1)).toBe(0);
  });

  it('knows how many keys it holds, within its bound', () => {
    const counter = new WindowCounter(60_000, 2);
    expect(counter.size).toBe(0);
    counter.add('a', 0);
    counter.add('a', 0);
    expect(counter.size).toBe(1);
    counter.add('b', 0);
    counter.add('c', 0);
    expect(counter.size).toBe(2);
    counter.delete('c');
    expect(counter.size).toBe(1);
  });
});
