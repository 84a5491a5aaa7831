import { describe, expect, it } from 'vitest';
import { type BackoffPolicy, backoffDelay, withJitter } from '../../src/core/backoff.js';

const fixed = (value: number) => () => value;

describe('backoffDelay', () => {
  it('waits nothing before the first failure, then doubles from the base up to the cap', () => {
    const policy: BackoffPolicy = { baseMs: 250, maxMs: 5_000, jitter: 'none' };
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map((n) => backoffDelay(n, policy))).toEqual([
      0, 250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000,
    ]);
  });

  it('stays at the cap however many failures (never Infinity or NaN, even from a zero base)', () => {
    expect(backoffDelay(5_000, { baseMs: 100, maxMs: 2_000, jitter: 'none' })).toBe(2_000);
    expect(backoffDelay(5_000, { baseMs: 0, maxMs: 2_000, jitter: 'none' })).toBe(0);
  });

  it('spreads the wait within ±s of it for a numeric jitter', () => {
    const policy: BackoffPolicy = { baseMs: 500, maxMs: 10_000, jitter: 0.2 };
    expect(backoffDelay(1, policy, fixed(0))).toBe(400);
    expect(backoffDelay(1, policy, fixed(0.5))).toBe(500);
    expect(backoffDelay(1, policy, fixed(0.999))).toBeCloseTo(599.8);
    // Applied after the cap: the wait may exceed it by the jitter.
    expect(backoffDelay(10, policy, fixed(0.999))).toBeCloseTo(11_996);
  });

  it('spreads the wait over its upper half for equal jitter', () => {
    const policy: BackoffPolicy = { baseMs: 250, maxMs: 10_000, jitter: 'equal' };
    expect(backoffDelay(1, policy, fixed(0))).toBe(125);
    expect(backoffDelay(1, policy, fixed(0.5))).toBe(187.5);
    expect(backoffDelay(3, policy, fixed(0))).toBe(500);
  });

  it('computes what the callers computed before it existed, to the bit', () => {
    for (const r of [0, 0.1, 0.123456789, 0.5, 0.75, 0.999999]) {
      const random = fixed(r);
      // The LISTEN connections: base · 2^(failures−1), capped, times 0.8 + r · 0.4.
      for (let failures = 1; failures <= 8; failures++) {
        const before = Math.min(500 * 2 ** (failures - 1), 10_000) * (0.8 + r * 0.4);
        expect(backoffDelay(failures, { baseMs: 500, maxMs: 10_000, jitter: 0.2 }, random)).toBe(before);
      }
      // Live Tail session polling: times 0.5 + r.
      expect(withJitter(3_200, 0.5, random)).toBe(3_200 * (0.5 + r));
      // Live Tail reconnects: times 0.5 + r / 2.
      expect(withJitter(4_000, 'equal', random)).toBe(4_000 * (0.5 + r / 2));
    }
  });

  it('draws a fresh random factor within the bounds on each call', () => {
    const policy: BackoffPolicy = { baseMs: 1_000, maxMs: 1_000, jitter: 0.2 };
    for (let i = 0; i < 200; i++) {
      const wait = backoffDelay(1, policy);
      expect(wait).toBeGreaterThanOrEqual(800);
      expect(wait).toBeLessThan(1_200);
    }
  });
});
