import { plural } from '../lib/format.js';
import type { LiveTailState } from '../use-live-tail.js';

const STATE_LABEL: Record<string, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  paused: 'Paused',
  ended: 'Ended',
  error: 'Stopped by an error',
};

/** The live tail's line: its state, pause and resume, and what it reads. */
export function LiveStatus({ tail, onStop }: { tail: LiveTailState; onStop: () => void }) {
  const state = tail.status?.state ?? 'connecting';
  const streams = tail.plan?.groups.length ?? 0;
  return (
    <section class="live-status" aria-label="Live tail">
      <span class={`tail-state state-${state}`} role="status" data-testid="tail-state">
        {STATE_LABEL[state] ?? state}
        {tail.status?.error && `: ${tail.status.error.message}`}
      </span>
      {state === 'paused' ? (
        <button type="button" onClick={tail.resume}>
          Resume
        </button>
      ) : (
        <button type="button" disabled={state === 'ended' || state === 'error'} onClick={tail.pause}>
          Pause
        </button>
      )}
      <button type="button" onClick={onStop}>
        Stop live tail
      </button>
      {tail.plan && (
        <span class="hint" data-testid="tail-plan">
          {streams === 0 ? 'Nothing to tail for this view' : plural(streams, 'stream')}
          {tail.plan.groups.length > 0 &&
            ` (${tail.plan.groups.map((g) => `${g.label}${g.stream.logStreamPrefix ? ` ${g.stream.logStreamPrefix}…` : ''}`).join('; ')})`}
          {tail.split?.filterPattern && ` · filter pattern sent upstream: ${tail.split.filterPattern}`}
          {tail.split?.browserOnly && ' · part of the filter applied in the browser'}
        </span>
      )}
    </section>
  );
}
