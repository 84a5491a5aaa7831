import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Api, Caller, Catalog } from '../api.js';
import { visibleText } from '../text.js';
import { useLogQuery } from '../use-log-query.js';
import { viewFromSearch, viewToSearch, windowOf, type View } from '../view.js';
import { FilterBar } from './filter-bar.js';
import { Histogram } from './histogram.js';
import { LiveTailPanel } from './live-tail-panel.js';
import { LogTable } from './log-table.js';
import { SourcePicker } from './source-picker.js';
import { TimeRangePicker } from './time-range.js';

interface Props {
  api: Api;
  caller: Caller;
  onSignOut: () => void;
}

export function Explorer({ api, caller, onSignOut }: Props) {
  const [view, setView] = useState<View>(() => {
    const v = viewFromSearch(location.search);
    const organizationId = v.organizationId ?? caller.key.organizationId ?? caller.organizations[0]?.id;
    return { ...v, organizationId };
  });
  const [catalog, setCatalog] = useState<Catalog>();
  const [catalogError, setCatalogError] = useState<string>();
  const [live, setLive] = useState(false);

  // The shareable URL follows the view (never the token).
  useEffect(() => {
    history.replaceState(null, '', `/ui/logs${viewToSearch(view)}`);
  }, [view]);

  useEffect(() => {
    if (view.organizationId === undefined) return;
    const abort = new AbortController();
    setCatalog(undefined);
    api.catalog(view.organizationId, abort.signal).then(
      (c) => {
        setCatalog(c);
        setCatalogError(undefined);
        // A first visit looks at the first environment that has sources.
        setView((v) => {
          if (v.environmentId !== undefined || v.deploymentResourceId !== undefined || v.logSourceKeys.length > 0)
            return v;
          const env = c.projects
            .flatMap((p) => p.environments)
            .find((e) => e.moduleInstances.some((m) => m.logSources.length > 0));
          return env ? { ...v, environmentId: env.id } : v;
        });
      },
      (e: Error) => {
        if (!abort.signal.aborted) setCatalogError(e.message);
      },
    );
    return () => abort.abort();
  }, [api, view.organizationId]);

  const hasSelection =
    view.environmentId !== undefined || view.deploymentResourceId !== undefined || view.logSourceKeys.length > 0;
  const query = useLogQuery(api, view, hasSelection && !live);
  const missed = useMemo(
    () => [...new Set([...(query.result?.missedSources ?? []), ...(query.histogram?.missedSources ?? [])])],
    [query.result, query.histogram],
  );
  const unsupported = useMemo(
    () => [...new Set([...(query.result?.unsupported ?? []), ...(query.histogram?.unsupported ?? [])])],
    [query.result, query.histogram],
  );
  const seenStreams = useMemo(() => {
    const seen = new Map<string, Set<string>>();
    for (const r of query.rows) {
      const key = `${r.sourceId}::${r.logSourceId}`;
      const set = seen.get(key) ?? new Set<string>();
      set.add(r.logStream);
      seen.set(key, set);
    }
    return seen;
  }, [query.rows]);
  const update = (patch: Partial<View>) => setView((v) => ({ ...v, ...patch }));

  return (
    <div class="explorer">
      <header class="top">
        <h1>Berth logs</h1>
        <p class="who" data-testid="who">
          {visibleText(caller.principal.name)} · key {visibleText(caller.key.id)}
          {caller.organizations.length > 0 &&
            ` · ${caller.organizations.map((o) => `${visibleText(o.name)} (${o.role})`).join(', ')}`}
        </p>
        <button type="button" class="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <section class="controls" aria-label="What to look at">
        <SourcePicker caller={caller} catalog={catalog} error={catalogError} view={view} onChange={update} />
        <TimeRangePicker range={view.range} onChange={(range) => update({ range })} />
      </section>
      <FilterBar filter={view.filter} unsupported={unsupported} onChange={(filter) => update({ filter })} />
      {missed.length > 0 && (
        <div class="banner partial" role="status" data-testid="partial-banner">
          Partial results: these sources could not be queried: {missed.join(', ')}
        </div>
      )}
      {query.error && (
        <div class="banner error" role="alert">
          {query.error}
        </div>
      )}
      <LiveTailPanel
        api={api}
        catalog={catalog}
        view={view}
        live={live}
        onLiveChange={setLive}
        seenStreams={seenStreams}
        fallback={
          <>
            <Histogram
              data={query.histogram}
              window={query.window ?? windowOf(view.range)}
              onZoom={(startMs, endMs) => update({ range: { kind: 'absolute', startMs, endMs } })}
            />
            <LogTable
              rows={query.rows}
              catalog={catalog}
              loading={query.loading}
              footer={
                query.nextEndTimeMs > 0 ? (
                  <button type="button" onClick={query.loadOlder} disabled={query.loading}>
                    Load older
                  </button>
                ) : query.rows.length > 0 ? (
                  <span class="end">No older rows in this window.</span>
                ) : undefined
              }
              summary={query.loading ? 'Loading…' : `${query.rows.length.toLocaleString()} rows`}
            />
          </>
        }
      />
    </div>
  );
}
