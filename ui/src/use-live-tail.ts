import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, Catalog } from './api.js';
import type { TableRow } from './components/log-table.js';
import { LiveTail } from './lib/live-tail.js';
import type { TailEvent, TailStatus } from './lib/tail-types.js';
import { type TailPlan, tailPlan } from './tail-plan.js';
import type { View } from './view.js';

/** Events a live tail keeps on the page; the oldest go first. */
export const MAX_LIVE_ROWS = 50_000;

export interface LiveTailState {
  /** Rows that match the filter, oldest first. */
  rows: TableRow[];
  /** Events read from the streams for the current view (before the part of the filter applied in the browser). */
  read: number;
  status?: TailStatus;
  plan?: TailPlan;
  split?: { filterPattern: string; browserOnly: boolean };
  pause: () => void;
  resume: () => void;
}

interface Read {
  row: TableRow;
  /** The source key, or '' when no source names the event (a deployment resource). */
  key: string;
}

/**
 * The live tail of a view: the streams of `tailPlan`, and the events read, attributed to their source. A change of
 * sources or filter while live reopens the streams from now, and keeps what was read: the events still in the
 * view are filtered again with the new filter, in the browser.
 */
export function useLiveTail(api: Api, catalog: Catalog | undefined, view: View, live: boolean): LiveTailState {
  const [rows, setRows] = useState<TableRow[]>([]);
  const [read, setRead] = useState(0);
  const [status, setStatus] = useState<TailStatus>();
  const [plan, setPlan] = useState<TailPlan>();
  const [split, setSplit] = useState<{ filterPattern: string; browserOnly: boolean }>();
  const tail = useRef<LiveTail | undefined>(undefined);
  /** Everything read while live (attributed, not yet filtered in the browser), oldest first. */
  const buffer = useRef<Read[]>([]);
  const wasLive = useRef(false);
  const key = JSON.stringify([view.environmentId, view.logSourceKeys, view.deploymentResourceId, view.filter]);

  useEffect(() => {
    if (!live || catalog === undefined) {
      wasLive.current = live;
      return;
    }
    let stopped = false;
    if (!wasLive.current) {
      buffer.current = [];
      setRows([]);
      setRead(0);
    }
    wasLive.current = true;
    const start = async () => {
      const { residualMatcher, splitForTail } = await import('./residual.js');
      if (stopped) return;
      const parts = splitForTail(view.filter);
      const full = tailPlan(catalog, view, parts);
      setSplit(parts);
      setPlan(full);
      // What was read before: only what is still in the view, filtered again (exactly, in the browser).
      const inView = new Set(full.sources.map((s) => s.key));
      const all = residualMatcher(view.filter);
      buffer.current = buffer.current.filter((r) => (r.key === '' ? full.sources.length === 0 : inView.has(r.key)));
      const kept = buffer.current.filter((r) => all(eventOf(r.row))).map((r) => r.row);
      setRows(kept);
      setRead(buffer.current.length);
      if (full.groups.length === 0) return;
      const keep = residualMatcher(full.residual);
      const t = new LiveTail({
        token: api.token,
        groups: full.groups.map((g) => g.stream),
        onEvents: (events: TailEvent[], index: number) => {
          const group = full.groups[index]!;
          const fresh: Read[] = [];
          const matching: TableRow[] = [];
          for (const e of events) {
            const who = group.attribute(e);
            if (who === null) continue;
            const source = 'source' in who ? who.source : undefined;
            const row: TableRow = {
              timestamp: Date.parse(e.timestamp),
              level: e.level,
              message: e.message,
              logStream: e.logStreamName,
              sourceId: source?.sourceId ?? '',
              logSourceId: source?.logSourceId ?? '',
              eventId: e.key,
              group: 'group' in who ? who.group : undefined,
              browserFiltered: full.browserFiltered,
            };
            fresh.push({ row, key: source?.key ?? '' });
            if (keep(e)) matching.push(row);
          }
          if (fresh.length === 0) return;
          buffer.current = buffer.current.concat(fresh).slice(-MAX_LIVE_ROWS);
          setRead(buffer.current.length);
          if (matching.length > 0) setRows((prev) => prev.concat(matching).slice(-MAX_LIVE_ROWS));
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
  }, [live, catalog, key]);

  return {
    rows,
    read,
    status,
    plan,
    split,
    pause: () => tail.current?.pause(),
    resume: () => tail.current?.resume(),
  };
}

function eventOf(row: TableRow): { message: string; level: string; logStreamName: string } {
  return { message: row.message, level: row.level, logStreamName: row.logStream };
}
