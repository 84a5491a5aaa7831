import { describe, expect, it } from 'vitest';
import { FairQueue, QueueTimeoutError } from '../../src/core/fair-queue.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FairQueue', () => {
  it('serves waiting work round-robin across groups, first come first served within one', async () => {
    const queue = new FairQueue({ max: 1 });
    const first = await queue.acquire({ group: 'a' });
    const order: string[] = [];
    const waiters = ['a1', 'a2', 'a3', 'b1', 'b2', 'c1'].map((name) =>
      queue.acquire({ group: name[0]! }).then((release) => {
        order.push(name);
        release();
      }),
    );
    first();
    await Promise.all(waiters);
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('keeps a group within its share and a member within its own', async () => {
    const queue = new FairQueue({ max: 4, perGroup: 2, perMember: 1 });
    const a1 = queue.tryAcquire({ group: 'a', member: 'x' });
    expect(a1).toBeDefined();
    expect(queue.tryAcquire({ group: 'a', member: 'x' })).toBeUndefined();
    const a2 = queue.tryAcquire({ group: 'a', member: 'y' });
    expect(a2).toBeDefined();
    expect(queue.tryAcquire({ group: 'a', member: 'z' })).toBeUndefined();
    expect(queue.tryAcquire({ group: 'b', member: 'w' })).toBeDefined();
    expect(queue.running).toBe(3);
    // A waiter of a full member share does not hold back another member of the same group.
    let xStarted = false;
    let zStarted = false;
    void queue.acquire({ group: 'a', member: 'x' }).then(() => {
      xStarted = true;
    });
    void queue.acquire({ group: 'a', member: 'z' }).then(() => {
      zStarted = true;
    });
    a2!();
    await tick();
    expect(zStarted).toBe(true);
    expect(xStarted).toBe(false);
    expect(queue.runningIn('a')).toBe(2);
  });

  it("counts a member's share within its group: one group's work never uses up its share in another", async () => {
    const queue = new FairQueue({ max: 8, perGroup: 4, perMember: 2 });
    const inB = [queue.tryAcquire({ group: 'b', member: 'x' }), queue.tryAcquire({ group: 'b', member: 'x' })];
    expect(inB.every((r) => r !== undefined)).toBe(true);
    // x is at its share in b, and only there.
    expect(queue.tryAcquire({ group: 'b', member: 'x' })).toBeUndefined();
    const inA = [queue.tryAcquire({ group: 'a', member: 'x' }), queue.tryAcquire({ group: 'a', member: 'x' })];
    expect(inA.every((r) => r !== undefined)).toBe(true);
    expect(queue.tryAcquire({ group: 'a', member: 'x' })).toBeUndefined();
    // A waiter of x in b times out naming the member share; x's release in a does not let it in.
    const waiting = queue.acquire({ group: 'b', member: 'x' }, { timeoutMs: 50 }).catch((e: unknown) => e);
    inA[0]!();
    const error = await waiting;
    expect(error).toBeInstanceOf(QueueTimeoutError);
    expect((error as QueueTimeoutError).share).toBe('member');
    // Released in b, x may run there again.
    inB[0]!();
    expect(queue.tryAcquire({ group: 'b', member: 'x' })).toBeDefined();
  });

  it("takes turns across a member's flows, first come first served within one flow", async () => {
    const queue = new FairQueue({ max: 4, perGroup: 2, perMember: 1 });
    const held = queue.tryAcquire({ group: 'a', member: 'x', flow: 'same' })!;
    const order: string[] = [];
    // Three copies of one request wait before a different request of the same member, and a flow-less one.
    const waiters = [
      ['same1', 'same'],
      ['same2', 'same'],
      ['same3', 'same'],
      ['other1', 'other'],
      ['plain1', undefined],
    ].map(([name, flow]) =>
      queue.acquire({ group: 'a', member: 'x', flow }).then((release) => {
        order.push(name!);
        // Each runs alone (the member's share is 1): release on the next turn of the event loop.
        setImmediate(release);
      }),
    );
    expect(queue.waiting).toBe(5);
    held();
    await Promise.all(waiters);
    expect(order).toEqual(['same1', 'other1', 'plain1', 'same2', 'same3']);
    await tick();
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 0, waiting: 0 });
  });

  it('keeps the same flow of two members in two lines, and forgets a line whose waiter left', async () => {
    const queue = new FairQueue({ max: 1 });
    const held = queue.tryAcquire({ group: 'a', member: 'x', flow: 'f' })!;
    const controller = new AbortController();
    const gone = queue.acquire({ group: 'a', member: 'z', flow: 'f' }, { signal: controller.signal });
    const order: string[] = [];
    const waiters = [
      ['x1', 'x'],
      ['x2', 'x'],
      ['y1', 'y'],
    ].map(([name, member]) =>
      queue.acquire({ group: 'a', member, flow: 'f' }).then((release) => {
        order.push(name!);
        release();
      }),
    );
    controller.abort(new Error('client gone'));
    await expect(gone).rejects.toThrow('client gone');
    expect(queue.waiting).toBe(3);
    held();
    await Promise.all(waiters);
    expect(order).toEqual(['x1', 'y1', 'x2']);
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 0, waiting: 0 });
  });

  it('serves the next step of work under way before new work of its group, and new work of other groups in turn', async () => {
    const queue = new FairQueue({ max: 1 });
    const held = queue.tryAcquire({ group: 'a', member: 'x', flow: 'q1' })!;
    const order: string[] = [];
    const waiters = (
      [
        ['new1', { group: 'a', member: 'x', flow: 'q2' }],
        ['b1', { group: 'b', member: 'y', flow: 'q1' }],
        ['step1', { group: 'a', member: 'x', flow: 's', continuing: true }],
        ['new2', { group: 'a', member: 'x', flow: 'q3' }],
        ['step2', { group: 'a', member: 'x', flow: 's', continuing: true }],
      ] as const
    ).map(([name, claim]) =>
      queue.acquire(claim).then((release) => {
        order.push(name);
        release();
      }),
    );
    held();
    await Promise.all(waiters);
    expect(order).toEqual(['step1', 'b1', 'step2', 'new1', 'new2']);
  });

  it('gives up after the wait time with the share that was full, and on abort', async () => {
    const queue = new FairQueue({ max: 2, perGroup: 1 });
    const held = queue.tryAcquire({ group: 'a' })!;
    const started = Date.now();
    const error = await queue.acquire({ group: 'a' }, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueTimeoutError);
    expect((error as QueueTimeoutError).share).toBe('group');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const controller = new AbortController();
    const aborted = queue.acquire({ group: 'a' }, { signal: controller.signal });
    controller.abort(new Error('client gone'));
    await expect(aborted).rejects.toThrow('client gone');
    expect(queue.waiting).toBe(0);
    held();
    expect(queue.running).toBe(0);
    // A release called twice frees one slot only.
    const once = queue.tryAcquire({ group: 'a' })!;
    queue.tryAcquire({ group: 'b' });
    once();
    once();
    expect(queue.running).toBe(1);
  });

  /**
   * Lines f1 (whose one waiter gives up after 20 ms and is sent again at once), f2 and f3 wait behind a held slot;
   * the order they are then served in.
   */
  async function servedAfterRetry(
    keepPlaceMs: number,
    claimOf: (name: string) => { group: string; member?: string; flow?: string },
  ): Promise<string[]> {
    const queue = new FairQueue({ max: 1 }, { keepPlaceMs });
    const held = queue.tryAcquire({ group: 'held' })!;
    const order: string[] = [];
    const serve = (name: string) => (release: () => void) => {
      order.push(name);
      release();
    };
    const first = await queue.acquire(claimOf('f1'), { timeoutMs: 20 }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(QueueTimeoutError);
    const others = ['f2', 'f3'].map((name) => queue.acquire(claimOf(name)).then(serve(name)));
    // f2 and f3 joined after f1 gave up: f1 keeps its place only by being parked.
    const retried = queue.acquire(claimOf('f1')).then(serve('f1'));
    held();
    await Promise.all([...others, retried]);
    return order;
  }

  it('keeps the place of a line whose waiter gave up while it is sent again within keepPlaceMs', async () => {
    const flows = (name: string) => ({ group: 'a', member: 'x', flow: name });
    expect(await servedAfterRetry(60_000, flows)).toEqual(['f1', 'f2', 'f3']);
    // Without it, the retry joins at the back.
    expect(await servedAfterRetry(0, flows)).toEqual(['f2', 'f3', 'f1']);
  });

  it('keeps the place of a group whose waiting work all gave up, for keepPlaceMs', async () => {
    const groups = (name: string) => ({ group: name });
    expect(await servedAfterRetry(60_000, groups)).toEqual(['f1', 'f2', 'f3']);
    expect(await servedAfterRetry(0, groups)).toEqual(['f2', 'f3', 'f1']);
  });

  it('puts a line that comes back after keepPlaceMs at the back', async () => {
    const queue = new FairQueue({ max: 1 }, { keepPlaceMs: 30 });
    const held = queue.tryAcquire({ group: 'held' })!;
    const order: string[] = [];
    const serve = (name: string) => (release: () => void) => {
      order.push(name);
      release();
    };
    await queue.acquire({ group: 'a', flow: 'f1' }, { timeoutMs: 10 }).catch(() => undefined);
    const f2 = queue.acquire({ group: 'a', flow: 'f2' }).then(serve('f2'));
    await new Promise((resolve) => setTimeout(resolve, 60));
    const f1 = queue.acquire({ group: 'a', flow: 'f1' }).then(serve('f1'));
    held();
    await Promise.all([f1, f2]);
    expect(order).toEqual(['f2', 'f1']);
  });
});
