import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, HistogramResult, LogQueryBody, LogQueryResult, LogRow } from './api.js';
import { windowOf, type View } from './view.js';

const PAGE = 1000;
const BUCKETS = 60;

export interface LogQueryState {
  rows: LogRow[];
  result?: LogQueryResult;
  histogram?: HistogramResult;
  window?: { startMs: number; endMs: number };
  nextEndTimeMs: number;
  loading: boolean;
  error?: string;
  loadOlder: () => void;
}

/** The query body of a view and window: a deployment resource alone, else the chosen sources, else the environment. */
export function queryBody(view: View, window: { startMs: number; endMs: number }): LogQueryBody {
  const body: LogQueryBody = { startTime: window.startMs, endTime: window.endMs, limit: PAGE };
  if (view.deploymentResourceId !== undefined) body.deploymentResourceId = view.deploymentResourceId;
  else if (view.logSourceKeys.length > 0) body.logSourceKeys = view.logSourceKeys;
  else if (view.environmentId !== undefined) body.environmentId = view.environmentId;
  if (view.filter.kind !== 'all') body.filter = view.filter;
  return body;
}

/** Runs the view's query and histogram whenever the view changes; "older" pages follow `nextEndTimeMs`. */
export function useLogQuery(api: Api, view: View, enabled: boolean): LogQueryState {
  const [rows, setRows] = useState<LogRow[]>([]);
  const [result, setResult] = useState<LogQueryResult>();
  const [histogram, setHistogram] = useState<HistogramResult>();
  const [window, setWindow] = useState<{ startMs: number; endMs: number }>();
  const [nextEndTimeMs, setNext] = useState(0);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  const running = useRef<AbortController | undefined>(undefined);
  const key = JSON.stringify([
    view.environmentId,
    view.logSourceKeys,
    view.deploymentResourceId,
    view.range,
    view.filter,
  ]);

  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    running.current?.abort();
    running.current = abort;
    const w = windowOf(view.range);
    const body = queryBody(view, w);
    setWindow(w);
    setLoading(true);
    setError(undefined);
    const fail = (e: Error) => {
      if (!abort.signal.aborted) setError(e.message);
    };
    api.histogram({ ...body, buckets: BUCKETS }, abort.signal).then(setHistogram, (e: Error) => {
      setHistogram(undefined);
      fail(e);
    });
    api
      .query(body, abort.signal)
      .then((r) => {
        setResult(r);
        setRows(r.rows);
        setNext(r.nextEndTimeMs);
      }, fail)
      .finally(() => {
        if (!abort.signal.aborted) setLoading(false);
      });
    return () => abort.abort();
  }, [api, key, enabled]);

  const loadOlder = () => {
    if (window === undefined || nextEndTimeMs === 0) return;
    const abort = new AbortController();
    running.current?.abort();
    running.current = abort;
    setLoading(true);
    api
      .query(queryBody(view, { startMs: window.startMs, endMs: nextEndTimeMs }), abort.signal)
      .then(
        (r) => {
          setRows((prev) => prev.concat(r.rows));
          setResult(r);
          setNext(r.nextEndTimeMs);
        },
        (e: Error) => {
          if (!abort.signal.aborted) setError(e.message);
        },
      )
      .finally(() => {
        if (!abort.signal.aborted) setLoading(false);
      });
  };

  return { rows, result, histogram, window, nextEndTimeMs, loading, error, loadOlder };
}
