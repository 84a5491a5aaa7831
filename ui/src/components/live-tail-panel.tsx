import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Api, Catalog } from '../api.js';
import { LiveTail } from '../lib/live-tail.js';
import type { TailEvent, TailStatus } from '../lib/tail-types.js';
import { tailPlan } from '../tail-plan.js';
import { displayText } from '../text.js';
import type { View } from '../view.js';
import { LogTable, type TableRow } from './log-table.js';

/** Rows a live tail keeps on the page; the oldest go first. */
const MAX_LIVE_ROWS = 50_000;

interface Props {
  api: Api;
  catalog?: Catalog;
  view: View;
  live: boolean;
  onLiveChange: (live: boolean) => void;
  /** Streams the last query saw per source key (sources without a stream prefix are tailed by these). */
  seenStreams: Map<string, Set<string>>;
  /** What is shown when not tailing: the query's histogram and table. */
  fallback: ComponentChildren;
}

const STATE_LABEL: Record<string, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  paused: 'Paused',
  ended: 'Ended',
  error: 'Stopped by an error',
};

/** One stream per account and region of the view, newest rows at the bottom, following them until the user scrolls up. */
export function LiveTailPanel({ api, catalog, view, live, onLiveChange, seenStreams, fallback }: Props) {
  const [rows, setRows] = useState<TableRow[]>([]);
  const [status, setStatus] = useState<TailStatus>();
  const tail = useRef<LiveTail | undefined>(undefined);
  // The streams the view needs, before the filter is split (that needs the lazily loaded parser).
  const plan = useMemo(
    () =>
      catalog ? tailPlan(catalog, view, { filterPattern: '', residual: { kind: 'all' } }, seenStreams) : undefined,
    [catalog, view, seenStreams],
  );
  const [split, setSplit] = useState<{ filterPattern: string; browserOnly: boolean }>();

  useEffect(() => {
    if (!live || plan === undefined || plan.groups.length === 0) return;
    let stopped = false;
    setRows([]);
    const start = async () => {
      const { residualMatcher, splitForTail } = await import('../residual.js');
      if (stopped || catalog === undefined) return;
      const parts = splitForTail(view.filter);
      setSplit(parts);
      const full = tailPlan(catalog, view, parts, seenStreams);
      const keep = residualMatcher(full.residual);
      const t = new LiveTail({
        token: api.token,
        groups: full.groups.map((g) => g.stream),
        onEvents: (events: TailEvent[], index: number) => {
          const group = full.groups[index]!;
          const fresh: TableRow[] = [];
          for (const e of events) {
            const source = group.attribute(e.logStreamName);
            if (source === null || !keep(e)) continue;
            fresh.push({
              timestamp: Date.parse(e.timestamp),
              level: e.level,
              message: e.message,
              logStream: e.logStreamName,
              sourceId: source?.sourceId ?? '',
              logSourceId: source?.logSourceId ?? '',
              eventId: e.key,
              group: group.label,
              browserFiltered: full.browserFiltered || group.browserFiltered,
            });
          }
          if (fresh.length > 0) setRows((prev) => prev.concat(fresh).slice(-MAX_LIVE_ROWS));
        },
        onState: setStatus,
      });
      tail.current = t;
      t.start();
    };
    void start();
    return () => {
      stopped = true;
      tail.current?.stop();
      tail.current = undefined;
    };
  }, [live, plan]);

  const state = status?.state ?? 'connecting';
  return (
    <>
      <fieldset class="tail-controls">
        <legend class="visually-hidden">Live tail</legend>
        {!live ? (
          <button type="button" disabled={!plan || plan.groups.length === 0} onClick={() => onLiveChange(true)}>
            Start live tail
          </button>
        ) : (
          <>
            <span class={`tail-state state-${state}`} role="status" data-testid="tail-state">
              {STATE_LABEL[state] ?? state}
              {status?.error && `: ${status.error.message}`}
            </span>
            {state === 'paused' ? (
              <button type="button" onClick={() => tail.current?.resume()}>
                Resume
              </button>
            ) : (
              <button
                type="button"
                disabled={state === 'ended' || state === 'error'}
                onClick={() => tail.current?.pause()}
              >
                Pause
              </button>
            )}
            <button type="button" onClick={() => onLiveChange(false)}>
              Stop live tail
            </button>
            {plan && (
              <span class="hint">
                {plan.groups.length} stream{plan.groups.length === 1 ? '' : 's'}
                {split?.filterPattern && ` · filter pattern sent upstream: ${split.filterPattern}`}
                {split?.browserOnly && ' · part of the filter applied in the browser'}
              </span>
            )}
            {plan && plan.untailable.length > 0 && (
              <span class="hint" data-testid="tail-untailable">
                Without a stream prefix, only the streams already seen are tailed for:{' '}
                {plan.untailable.map((group) => displayText(group, 200)).join(', ')}
              </span>
            )}
          </>
        )}
      </fieldset>
      {live ? (
        <LogTable rows={rows} catalog={catalog} follow summary={`${rows.length.toLocaleString()} live rows`} />
      ) : (
        fallback
      )}
    </>
  );
}
