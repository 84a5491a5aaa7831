import { describe, expect, it } from 'vitest';
import { concurrencyLimit, runLimited } from '../../src/core/concurrency.js';

/** A task that runs until released. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { done, release };
}

describe('runLimited', () => {
  it('runs at most `size` tasks at once and starts the next as one ends', async () => {
    const limit = concurrencyLimit(2);
    const gates = [gate(), gate(), gate()];
    const started: number[] = [];
    const runs = gates.map((g, i) =>
      runLimited(limit, undefined, async () => {
        started.push(i);
        await g.done;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    gates[0]!.release();
    expect(await runs[0]).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates[1]!.release();
    gates[2]!.release();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
  });

  it('lets a caller whose signal fires while it waits leave at once, with the signal reason, never running its task', async () => {
    const limit = concurrencyLimit(1);
    const busy = gate();
    const first = runLimited(limit, undefined, () => busy.done);
    const abort = new AbortController();
    let ran = false;
    const waiting = runLimited(limit, abort.signal, async () => {
      ran = true;
    });
    const reason = new Error('client gone');
    abort.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(limit.size).toBe(0);
    busy.release();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(ran).toBe(false);
  });

  it('rejects at once a caller whose signal has already fired', async () => {
    const abort = new AbortController();
    abort.abort(new Error('gone'));
    await expect(runLimited(concurrencyLimit(1), abort.signal, async () => 1)).rejects.toThrow('gone');
  });

  it('keeps the slot of a started task whose signal fires until the task itself ends', async () => {
    const limit = concurrencyLimit(1);
    const abort = new AbortController();
    const slow = gate();
    const first = runLimited(limit, abort.signal, () => slow.done.then(() => 'stopped late'));
    let secondStarted = false;
    const second = runLimited(limit, undefined, async () => {
      secondStarted = true;
    });
    abort.abort(new Error('deadline'));
    await new Promise((r) => setTimeout(r, 20));
    // The aborted task still runs (it has not stopped yet): the next one waits.
    expect(limit.pending).toBe(1);
    expect(secondStarted).toBe(false);
    slow.release();
    expect(await first).toBe('stopped late');
    await second;
    expect(secondStarted).toBe(true);
  });
});
