/**
 * An abort signal that fires when any parent fires or `timeoutMs` passes. Written out rather than
 * `AbortSignal.any([… AbortSignal.timeout(ms)])`: on Node 20 such a timeout, held only by the
 * combined signal, was seen firing only after the awaited work had finished — too late to stop it.
 * `dispose` removes the listeners and the timer once the work is over.
 */
export interface LinkedSignal {
  signal: AbortSignal;
  dispose(): void;
}

export class DeadlineError extends Error {
  override name = 'TimeoutError';
}

export function linkSignals(
  parents: readonly (AbortSignal | undefined)[],
  timeoutMs?: number,
  what = 'the work',
): LinkedSignal {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  const dispose = () => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  };
  for (const parent of parents) {
    if (parent === undefined) continue;
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const onAbort = () => {
      controller.abort(parent.reason);
      dispose();
    };
    parent.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => parent.removeEventListener('abort', onAbort));
  }
  if (timeoutMs !== undefined && !controller.signal.aborted) {
    const timer = setTimeout(() => {
      controller.abort(new DeadlineError(`${what} did not finish within ${timeoutMs} ms`));
      dispose();
    }, timeoutMs);
    cleanups.push(() => clearTimeout(timer));
  }
  if (controller.signal.aborted) dispose();
  return { signal: controller.signal, dispose };
}
