import { describe, expect, it } from 'vitest';
import { Listeners } from '../../src/core/listeners.js';

describe('Listeners', () => {
  it('calls each listener in the order added, past one that throws; the removal stops it', () => {
    const listeners = new Listeners<[value: number]>();
    const calls: string[] = [];
    const removeA = listeners.add((v) => calls.push(`a${v}`));
    listeners.add(() => {
      throw new Error('boom');
    });
    listeners.add((v) => calls.push(`c${v}`));
    listeners.emit(1);
    removeA();
    removeA();
    listeners.emit(2);
    expect(calls).toEqual(['a1', 'c1', 'c2']);
    expect(listeners.size).toBe(2);
  });
});
