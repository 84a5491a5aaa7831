import { setImmediate as nextTurn } from 'node:timers/promises';
import { FairQueue, type Release } from '../core/fair-queue.js';
import { fairnessKey } from '../core/tenant-context.js';

/**
 * Turns of the event loop for CPU-heavy work done in process (a user regex over a page of rows): one piece at a
 * time in the whole process, taken round-robin by tenant, and each starts on a fresh turn of the event loop,
 * after the network has been served. Yielding alone is not enough: with many heavy requests each yielding
 * between its slices, every step of a cheap request waits behind one slice of each of them.
 */
const turns = new FairQueue({ max: 1 });

/** Waits for this tenant's next CPU turn; run at most one slice (`sliceMs`) of work, then call the release. */
export async function cpuTurn(signal?: AbortSignal): Promise<Release> {
  const release = await turns.acquire({ group: fairnessKey() }, { signal });
  try {
    // Granted in a promise callback: start the work on the next turn, once I/O has been polled.
    await nextTurn();
    signal?.throwIfAborted();
  } catch (error) {
    release();
    throw error;
  }
  return release;
}
