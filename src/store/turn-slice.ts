import { performance } from 'node:perf_hooks';

/** How long one turn of the event loop may spend running PGlite statements back to back. */
export const TURN_SLICE_MS = 10;

let sliceStart = performance.now();

/**
 * PGlite runs every statement on the event loop's thread, and a request's next statement starts in
 * the same chain of promise callbacks as the one before, so under load one turn of the event loop
 * ran every queued statement back to back before it came back to the network. libuv accepts one
 * connection per turn (libuv#3696): clients that connected while Berth was busy waited seconds to
 * be accepted at all (timing out) while those already connected were served. Called before each
 * statement, this ends the turn once it has run statements for TURN_SLICE_MS; the statement then
 * runs in the next turn, after the loop has accepted and read what was waiting.
 */
export async function yieldWhenTurnSpent(): Promise<void> {
  if (performance.now() - sliceStart < TURN_SLICE_MS) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  sliceStart = performance.now();
}
