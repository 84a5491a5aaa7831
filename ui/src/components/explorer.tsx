import { useEffect, useMemo, useState } from 'preact/hooks';
import type { FilterNode } from '../../../src/core/filter-tree/schema.js';
import type { Api, Caller, Catalog } from '../api.js';
import { busiest, countLastHour } from '../busiest.js';
import { liveHeading, queryHeading } from '../lib/count-heading.js';
import { andCondition } from '../lib/filter-edit.js';
import { invalidRegex } from '../lib/filter-regex.js';
import { formatFilterText, parseFilterText } from '../lib/filter-text.js';
import { filterLevels, levelTotals, rowLevels, toggleLevel } from '../lib/level-filter.js';
import { addRecent, loadRecent, type RecentQuery, saveRecent } from '../lib/recent.js';
import { unsupportedByPath } from '../lib/unsupported.js';
import { visibleText } from '../text.js';
import { useLiveTail } from '../use-live-tail.js';
import { useLogQuery } from '../use-log-query.js';
import { PRESETS, type TimeRange, type View, viewFromSearch, viewToSearch, widerPreset, windowOf } from '../view.js';
import { FilterBox } from './filter-bar.js';
import { FilterEditor } from './filter-editor.js';
import { Histogram } from './histogram.js';
import { LevelFacet } from './level-facet.js';
import { LiveStatus } from './live-status.js';
import { LogTable } from './log-table.js';
import { SourcePicker, sourceSummary } from './source-picker.js';
import { shortRangeLabel, TimeRangePicker } from './time-range.js';

interface Props {
  api: Api;
  caller: Caller;
  onSignOut: () => void;
}

const hasSelection = (v: View) =>
  v.environmentId !== undefined || v.deploymentResourceId !== undefined || v.logSourceKeys.length > 0;

/** "the last 1 hour", or the two ends of an absolute range. */
function rangePhrase(range: TimeRange): string {
  if (range.kind === 'absolute') return shortRangeLabel(range);
  return `the ${(PRESETS.find((p) => p.id === range.preset)?.label ?? range.preset).toLowerCase()}`;
}

export function Explorer({ api, caller, onSignOut }: Props) {
  const [view, setView] = useState<View>(() => {
    const v = viewFromSearch(location.search);
    const organizationId = v.organizationId ?? caller.key?.organizationId ?? caller.organizations[0]?.id;
    return { ...v, organizationId };
  });
  const [catalog, setCatalog] = useState<Catalog>();
  const [catalogError, setCatalogError] = useState<string>();
  const [envCounts, setEnvCounts] = useState<Map<string, number | undefined>>();
  const [choosing, setChoosing] = useState(false);
  const [live, setLive] = useState(false);
  const [run, setRun] = useState(0);
  const [text, setText] = useState(() => formatFilterText(view.filter) ?? '');
  const [filterError, setFilterError] = useState<string>();
  const [tree, setTree] = useState(() => formatFilterText(view.filter) === undefined);
  const [recent, setRecent] = useState<RecentQuery[]>(() => loadRecent());
  const [recentOpen, setRecentOpen] = useState(false);

  // The shareable URL follows the view (never the token).
  useEffect(() => {
    history.replaceState(null, '', `/ui/logs${viewToSearch(view)}`);
  }, [view]);

  // `/` anywhere but in a text field goes to the filter box, as in most log tools.
  useEffect(() => {
    const slash = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      if (target?.closest('input, textarea, select, [contenteditable="true"]')) return;
      e.preventDefault();
      document.getElementById('filter-text')?.focus();
    };
    document.addEventListener('keydown', slash);
    return () => document.removeEventListener('keydown', slash);
  }, []);

  // The tree editor, the level facet or a recent query changed the filter: the line follows when it can spell it.
  useEffect(() => {
    const s = formatFilterText(view.filter);
    if (s !== undefined) setText(s);
  }, [view.filter]);

  useEffect(() => {
    if (view.organizationId === undefined) return;
    const abort = new AbortController();
    setCatalog(undefined);
    api.catalog(view.organizationId, abort.signal).then(
      async (c) => {
        setCatalog(c);
        setCatalogError(undefined);
        if (hasSelection(view)) return;
        // A first visit looks at the environment with the most events in the last hour.
        setChoosing(true);
        const counts = await countLastHour(api, c, abort.signal);
        if (abort.signal.aborted) return;
        setEnvCounts(new Map(counts.map((x) => [x.id, x.count])));
        const id = busiest(counts);
        setView((v) => (hasSelection(v) || id === undefined ? v : { ...v, environmentId: id }));
        setChoosing(false);
      },
      (e: Error) => {
        if (!abort.signal.aborted) setCatalogError(e.message);
      },
    );
    return () => abort.abort();
  }, [api, view.organizationId]);

  const selected = hasSelection(view);
  const query = useLogQuery(api, view, selected && !live && !choosing, run);
  const tail = useLiveTail(api, catalog, view, live);
  const missed = useMemo(
    () => [...new Set([...(query.result?.missedSources ?? []), ...(query.histogram?.missedSources ?? [])])],
    [query.result, query.histogram],
  );
  const unsupported = useMemo(
    () => [...new Set([...(query.result?.unsupported ?? []), ...(query.histogram?.unsupported ?? [])])],
    [query.result, query.histogram],
  );
  const reasons = useMemo(() => unsupportedByPath(unsupported), [unsupported]);
  // Reasons are shown at their predicates: in the tree.
  useEffect(() => {
    if (reasons.size > 0) setTree(true);
  }, [reasons]);

  const update = (patch: Partial<View>) => setView((v) => ({ ...v, ...patch }));
  const setFilter = (filter: FilterNode) => {
    setFilterError(undefined);
    update({ filter });
  };

  const remember = (next: View, filterText: string) => {
    const list = addRecent(recent, {
      search: viewToSearch(next),
      filterText,
      sourceLabel: sourceSummary(catalog, next),
      rangeLabel: shortRangeLabel(next.range),
    });
    setRecent(list);
    saveRecent(list);
  };

  const runLine = async (line: string) => {
    const parsed = parseFilterText(line);
    if (!parsed.ok) return setFilterError(`${parsed.error} (at character ${parsed.at + 1})`);
    const bad = await invalidRegex(parsed.filter);
    if (bad !== undefined) return setFilterError(`Invalid regex /${bad.value}/: ${bad.message}`);
    setFilterError(undefined);
    const next = { ...view, filter: parsed.filter };
    setView(next);
    setRun((r) => r + 1);
    if (hasSelection(next)) remember(next, line.trim());
  };

  const window = query.window ?? windowOf(view.range);
  const heading = queryHeading({
    total: query.histogram ? query.histogram.buckets.reduce((n, b) => n + sum(b.counts), 0) : undefined,
    totalFailed: query.histogramFailed,
    shown: query.rows.length,
    loading: query.loading || choosing,
    failed: query.error !== undefined && query.stale,
    more: query.nextEndTimeMs > 0,
  });
  const wider = widerPreset(view.range);
  const filterText = formatFilterText(view.filter);
  const levelCounts = live ? rowLevels(tail.rows) : query.histogram ? levelTotals(query.histogram.buckets) : undefined;

  return (
    <div class="explorer">
      <header class="top">
        <h1>Berth logs</h1>
        <p class="who" data-testid="who">
          {visibleText(caller.principal.name)} ·{' '}
          {caller.key
            ? `key ${visibleText(caller.key.id)}`
            : `signed in with ${caller.session?.provider ?? 'a session'}`}
          {caller.organizations.length > 0 &&
            ` · ${caller.organizations.map((o) => `${visibleText(o.name)} (${o.role})`).join(', ')}`}
        </p>
        <button type="button" class="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <div class="toolbar" role="toolbar" aria-label="What to look at">
        <SourcePicker
          caller={caller}
          catalog={catalog}
          error={catalogError}
          view={view}
          envCounts={envCounts}
          onChange={update}
        />
        <TimeRangePicker range={view.range} onChange={(range) => update({ range })} />
        <FilterBox
          text={text}
          onText={(t) => {
            setText(t);
            setFilterError(undefined);
          }}
          onRun={(t) => void runLine(t)}
          error={filterError}
          treeOnly={formatFilterText(view.filter) === undefined}
          recent={recent}
          onRecent={(r) => {
            const next = viewFromSearch(r.search);
            setView((v) => ({ ...next, organizationId: next.organizationId ?? v.organizationId }));
            setRun((n) => n + 1);
          }}
          recentOpen={recentOpen}
          onRecentOpen={setRecentOpen}
        />
        <button
          type="button"
          class={`live-toggle${live ? ' on' : ''}`}
          aria-pressed={live}
          disabled={!selected || catalog === undefined}
          title={live ? 'Stop the live tail' : 'Tail the sources live'}
          onClick={() => setLive(!live)}
        >
          Live
        </button>
        <button
          type="button"
          class="tree-toggle"
          aria-expanded={tree}
          aria-label="Edit as tree"
          title="Edit the filter as a tree (and/or groups)"
          onClick={() => setTree(!tree)}
        >
          Tree
        </button>
      </div>
      {filterError && (
        <p id="filter-error" class="filter-error error" role="alert">
          {filterError}
        </p>
      )}
      {tree && <FilterEditor filter={view.filter} reasons={reasons} onChange={setFilter} />}
      {unsupported.length > 0 && !live && (
        <div class="banner unsupported-banner" role="status" data-testid="unsupported-banner">
          The results are broader than the filter: {unsupported.join('; ')}
        </div>
      )}
      {missed.length > 0 && !live && (
        <div class="banner partial" role="status" data-testid="partial-banner">
          Partial results: these sources could not be queried: {missed.join(', ')}
        </div>
      )}
      {query.error && !live && (
        <div class="banner error" role="alert" data-testid="error-banner">
          {query.error}
        </div>
      )}
      {live ? (
        <LiveStatus tail={tail} onStop={() => setLive(false)} />
      ) : (
        <Histogram
          data={query.histogram}
          window={window}
          heading={{ total: heading.total }}
          stale={query.histogramFailed}
          onZoom={(startMs, endMs) => update({ range: { kind: 'absolute', startMs, endMs } })}
        />
      )}
      <div class="body">
        <LevelFacet
          counts={levelCounts}
          failed={!live && query.histogramFailed}
          selected={filterLevels(view.filter)}
          note={live ? 'Rows of this live tail' : 'Whole range, as the histogram'}
          onToggle={(level) => setFilter(toggleLevel(view.filter, level))}
        />
        {live ? (
          <LogTable
            rows={tail.rows}
            catalog={catalog}
            follow
            onFilter={(node) => setFilter(andCondition(view.filter, node))}
            summary={liveHeading(tail.rows.length, tail.read)}
            empty={<p>Waiting for new events…</p>}
          />
        ) : (
          <LogTable
            rows={query.rows}
            catalog={catalog}
            loading={query.loading || choosing}
            onFilter={(node) => setFilter(andCondition(view.filter, node))}
            stale={query.stale && query.rows.length > 0}
            summary={choosing ? { count: 'Loading…', detail: 'finding the busiest environment' } : heading.summary}
            empty={
              !selected ? (
                <p>Choose sources to look at.</p>
              ) : query.error ? (
                <p>No rows: the query failed.</p>
              ) : query.result ? (
                <div class="empty-message">
                  <p data-testid="empty-message">
                    {filterText ? (
                      <>
                        No logs match <code>{filterText}</code> in {rangePhrase(view.range)}.
                      </>
                    ) : (
                      <>No logs in {rangePhrase(view.range)}.</>
                    )}
                  </p>
                  {wider && (
                    <p class="hint">
                      Older events may match: widen the range.{' '}
                      <button type="button" onClick={() => update({ range: { kind: 'relative', preset: wider } })}>
                        Widen to {PRESETS.find((p) => p.id === wider)!.label.toLowerCase()}
                      </button>
                    </p>
                  )}
                </div>
              ) : undefined
            }
            footer={
              query.nextEndTimeMs > 0 ? (
                <button type="button" onClick={query.loadOlder} disabled={query.loading}>
                  Load older
                </button>
              ) : query.rows.length > 0 && !query.stale ? (
                <span class="end">No older rows in this window.</span>
              ) : undefined
            }
          />
        )}
      </div>
    </div>
  );
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, c) => a + c, 0);
}
