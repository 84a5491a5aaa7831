import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, HistogramResult, LogQueryBody, LogQueryResult, LogRow } from './api.js';
import { windowOf, type View } from './view.js';

const PAGE = 1000;
const BUCKETS = 60;

export interface LogQueryState {
  rows: LogRow[];
  result?: LogQueryResult;
  histogram?: HistogramResult;
  /** The histogram of the current view failed (or its query did): its counts are not known. */
  histogramFailed: boolean;
  window?: { startMs: number; endMs: number };
  nextEndTimeMs: number;
  loading: boolean;
  error?: string;
  /** The rows are those of an earlier view: the query of the current one failed. */
  stale: boolean;
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

/**
 * Runs the view's query and histogram whenever the view changes, or `run` does (Run again: a relative range then
 * means up to now); "older" pages follow `nextEndTimeMs`.
 */
export function useLogQuery(api: Api, view: View, enabled: boolean, run = 0): LogQueryState {
  const [rows, setRows] = useState<LogRow[]>([]);
  const [result, setResult] = useState<LogQueryResult>();
  const [histogram, setHistogram] = useState<HistogramResult>();
  const [histogramFailed, setHistogramFailed] = useState(false);
  const [window, setWindow] = useState<{ startMs: number; endMs: number }>();
  const [nextEndTimeMs, setNext] = useState(0);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  const [stale, setStale] = useState(false);
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
    setHistogram(undefined);
    setHistogramFailed(false);
    const fail = (e: Error) => {
      if (abort.signal.aborted) return;
      setError(e.message);
      setHistogramFailed(true);
    };
    api.histogram({ ...body, buckets: BUCKETS }, abort.signal).then((h) => {
      if (!abort.signal.aborted) setHistogram(h);
    }, fail);
    api
      .query(body, abort.signal)
      .then(
        (r) => {
          if (abort.signal.aborted) return;
          setResult(r);
          setRows(r.rows);
          setNext(r.nextEndTimeMs);
          setStale(false);
        },
        (e: Error) => {
          if (abort.signal.aborted) return;
          fail(e);
          // What the table holds answered another view: it stays, marked as such, until a query succeeds.
          setStale(true);
          setNext(0);
        },
      )
      .finally(() => {
        if (!abort.signal.aborted) setLoading(false);
      });
    return () => abort.abort();
  }, [api, key, enabled, run]);

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
          if (!abort.signal.aborted) setError(`Older rows could not be loaded: ${e.message}`);
        },
      )
      .finally(() => {
        if (!abort.signal.aborted) setLoading(false);
      });
  };

  return { rows, result, histogram, histogramFailed, window, nextEndTimeMs, loading, error, stale, loadOlder };
}
