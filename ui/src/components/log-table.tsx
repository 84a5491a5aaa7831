import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Catalog, LogRow } from '../api.js';
import type { FilterNode } from '../../../src/core/filter-tree/schema.js';
import type { Summary } from '../lib/count-heading.js';
import { messageFields } from '../lib/filter-edit.js';
import { columnTemplate, DEFAULT_WIDTHS, loadWidths, resized, saveWidths } from '../lib/columns.js';
import { displayText, prettyMessage } from '../text.js';
import { useVirtualizer } from '../use-virtualizer.js';
import { formatSeconds, formatUtc } from '../view.js';

export interface TableRow extends LogRow {
  /** Where the row came from when no log source names it (live tail: the log group). */
  group?: string;
  /** True when part of the filter was applied in the browser (live tail). */
  browserFiltered?: boolean;
}

interface Props {
  rows: TableRow[];
  catalog?: Catalog;
  loading?: boolean;
  /** What the rows are (left of the results bar). */
  summary: Summary;
  /** The rows answered an earlier view (the current one failed): faded, and said so. */
  stale?: boolean;
  /** Shown instead of rows when there are none and nothing loads. */
  empty?: ComponentChildren;
  footer?: ComponentChildren;
  /** Live tail: keep the newest (last) row in view until the user scrolls up. */
  follow?: boolean;
  /** "Filter for" / "filter out" a value of an expanded row: the condition to AND to the filter. */
  onFilter?: (node: FilterNode) => void;
}

/** Characters of a message shown in its cell (one line, or wrapped); the whole message is in the expanded row. */
const CELL_CHARS = 500;
const WRAPPED_CHARS = 5_000;
const COLUMNS = ['Time', 'Level', 'Source', 'Stream'] as const;

export function LogTable({ rows, catalog, loading, summary, stale, empty, footer, follow, onFilter }: Props) {
  const scroller = useRef<HTMLElement>(null);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [copied, setCopied] = useState<string>();
  const [wrap, setWrap] = useState(false);
  const [widths, setWidths] = useState<number[]>(() => loadWidths());
  const atBottom = useRef(true);
  const sources = useMemo(() => sourceNames(catalog), [catalog]);
  const keyOf = (row: TableRow, i: number) => row.eventId ?? `${row.timestamp}:${i}`;
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 28,
    overscan: 12,
    getItemKey: (i) => keyOf(rows[i]!, i),
  });

  useEffect(() => {
    if (follow && atBottom.current && rows.length > 0) virtualizer.scrollToIndex(rows.length - 1, { align: 'end' });
  }, [rows.length, follow]);

  // Wrapped rows change height: measure them again.
  useEffect(() => virtualizer.measure(), [wrap, widths]);

  const toggle = (key: string) =>
    setExpanded((prev) => {
      const next = new Set(prev);
      if (next.has(key)) next.delete(key);
      else next.add(key);
      return next;
    });
  const copy = async (row: TableRow, key: string) => {
    const { browserFiltered: _b, group: _g, ...plain } = row;
    await navigator.clipboard.writeText(JSON.stringify(plain, null, 2)).then(
      () => setCopied(key),
      () => setCopied(undefined),
    );
  };
  const resize = (column: number, width: number, save: boolean) => {
    const next = resized(widths, column, width);
    setWidths(next);
    if (save) saveWidths(next);
  };

  return (
    <section class="results" aria-label="Log rows">
      <div class="results-bar">
        <p class="summary" role="status">
          <span class="count" data-testid="summary">
            {summary.count}
          </span>
          {summary.detail && ` ${summary.detail}`}
        </p>
        {stale && (
          <p class="stale-notice" data-testid="stale-notice">
            Showing results from before the error
          </p>
        )}
        <label class="wrap-toggle">
          <input type="checkbox" checked={wrap} onChange={(e) => setWrap(e.currentTarget.checked)} />
          Wrap lines
        </label>
      </div>
      <div
        class={`table${wrap ? ' wrap' : ''}${stale ? ' stale' : ''}`}
        aria-busy={loading}
        style={{ '--cols': columnTemplate(widths) }}
      >
        <div class="thead">
          {COLUMNS.map((name, i) => (
            <span key={name} class="th">
              {name}
              <ResizeHandle
                name={name}
                width={widths[i] ?? DEFAULT_WIDTHS[i]!}
                onResize={(w, save) => resize(i, w, save)}
              />
            </span>
          ))}
          <span class="th">Message</span>
        </div>
        <section
          class="tbody"
          ref={scroller}
          data-testid="rows"
          // A scrolling region must be reachable by keyboard (WCAG 2.1.1): arrow keys and Page Up/Down scroll it.
          // biome-ignore lint/a11y/noNoninteractiveTabindex: the focusable element is the scroller itself
          tabIndex={0}
          aria-label="Log rows"
          onScroll={(e) => {
            const el = e.currentTarget;
            atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
          }}
        >
          {rows.length === 0 && (loading || empty) && (
            <div class="empty" data-testid={loading ? 'loading' : 'empty'}>
              {loading ? <p class="loading-text">Loading…</p> : empty}
            </div>
          )}
          <ul class="rows" style={{ height: `${virtualizer.getTotalSize()}px` }}>
            {virtualizer.getVirtualItems().map((item) => {
              const row = rows[item.index]!;
              const key = String(item.key);
              const open = expanded.has(key);
              const ms = String(row.timestamp % 1000).padStart(3, '0');
              return (
                <li
                  key={key}
                  class={`row${open ? ' open' : ''}`}
                  aria-setsize={rows.length}
                  aria-posinset={item.index + 1}
                  data-index={item.index}
                  ref={(el) => {
                    if (el) virtualizer.measureElement(el);
                  }}
                  style={{ transform: `translateY(${item.start}px)` }}
                >
                  <button type="button" class="cells" aria-expanded={open} onClick={() => toggle(key)}>
                    <span class="time" title={formatUtc(row.timestamp)}>
                      {formatSeconds(row.timestamp)}
                      <span class="ms">.{ms}</span>
                    </span>
                    <span class={`level level-${row.level.toLowerCase()}`}>{row.level}</span>
                    <span class="source">
                      {displayText(sources.get(`${row.sourceId}::${row.logSourceId}`) ?? row.group ?? '—', 200)}
                    </span>
                    <span class="stream">{displayText(row.logStream, 200)}</span>
                    <span class="message">
                      {row.browserFiltered && (
                        <span class="badge" title="Part of the filter was applied in the browser">
                          browser-filtered
                        </span>
                      )}
                      {displayText(row.message, wrap ? WRAPPED_CHARS : CELL_CHARS)}
                    </span>
                  </button>
                  {open && (
                    <div class="detail">
                      <pre data-testid="message-detail">{prettyMessage(row.message)}</pre>
                      {onFilter && <RowFilters row={row} onFilter={onFilter} />}
                      <button type="button" onClick={() => copy(row, key)}>
                        {copied === key ? 'Copied' : 'Copy row as JSON'}
                      </button>
                    </div>
                  )}
                </li>
              );
            })}
          </ul>
        </section>
      </div>
      {footer && <div class="footer">{footer}</div>}
    </section>
  );
}

/** The row's stream and its JSON fields, each with "filter for" (+) and "filter out" (−). */
function RowFilters({ row, onFilter }: { row: TableRow; onFilter: (node: FilterNode) => void }) {
  const fields = messageFields(row.message);
  const stream: FilterNode = { kind: 'stream', op: 'equals', value: row.logStream };
  const items: { label: string; node: FilterNode }[] = [
    { label: `stream ${displayText(row.logStream, 120)}`, node: stream },
    ...fields.map((f) => ({
      label: `${f.path} = ${displayText(JSON.stringify(f.value), 120)}`,
      node: { kind: 'field', path: f.path, op: 'eq', value: f.value } as FilterNode,
    })),
  ];
  return (
    // A group of buttons, not a nested list: the table's rows stay its only list items.
    <fieldset class="row-filters" aria-label="Filter by this row">
      {items.map(({ label, node }) => (
        <div class="row-filter" key={label}>
          <button type="button" class="icon" aria-label={`Filter for ${label}`} onClick={() => onFilter(node)}>
            +
          </button>
          <button
            type="button"
            class="icon"
            aria-label={`Filter out ${label}`}
            onClick={() => onFilter({ kind: 'not', node })}
          >
            −
          </button>
          <code>{label}</code>
        </div>
      ))}
    </fieldset>
  );
}

/** A column's right edge: drag it, or focus it and use ←/→, to change the column's width. */
function ResizeHandle({
  name,
  width,
  onResize,
}: {
  name: string;
  width: number;
  onResize: (width: number, save: boolean) => void;
}) {
  const drag = useRef<{ x: number; width: number } | undefined>(undefined);
  return (
    // biome-ignore lint/a11y/useSemanticElements: a focusable splitter has no native element (an <hr> cannot take focus)
    <span
      class="resize"
      role="separator"
      aria-orientation="vertical"
      aria-label={`Resize the ${name} column`}
      aria-valuenow={width}
      aria-valuemin={40}
      aria-valuemax={800}
      tabIndex={0}
      data-testid={`resize-${name.toLowerCase()}`}
      onPointerDown={(e) => {
        e.preventDefault();
        e.currentTarget.setPointerCapture(e.pointerId);
        drag.current = { x: e.clientX, width };
      }}
      onPointerMove={(e) => {
        if (drag.current) onResize(drag.current.width + e.clientX - drag.current.x, false);
      }}
      onPointerUp={(e) => {
        if (!drag.current) return;
        onResize(drag.current.width + e.clientX - drag.current.x, true);
        drag.current = undefined;
      }}
      onKeyDown={(e) => {
        if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
        e.preventDefault();
        onResize(width + (e.key === 'ArrowRight' ? 16 : -16), true);
      }}
    />
  );
}

function sourceNames(catalog?: Catalog): Map<string, string> {
  const names = new Map<string, string>();
  for (const p of catalog?.projects ?? [])
    for (const e of p.environments)
      for (const m of e.moduleInstances) for (const s of m.logSources) names.set(s.key, `${m.name} · ${s.logGroup}`);
  return names;
}
