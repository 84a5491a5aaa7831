import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Catalog, LogRow } from '../api.js';
import { displayText, prettyMessage } from '../text.js';
import { useVirtualizer } from '../use-virtualizer.js';
import { formatLocal, formatUtc } from '../view.js';

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
  summary: string;
  footer?: ComponentChildren;
  /** Live tail: keep the newest (last) row in view until the user scrolls up. */
  follow?: boolean;
}

/** Characters of a message shown in its one-line cell; the whole message is in the expanded row. */
const CELL_CHARS = 500;

export function LogTable({ rows, catalog, loading, summary, footer, follow }: Props) {
  const scroller = useRef<HTMLElement>(null);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [copied, setCopied] = useState<string>();
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

  return (
    <section class="results" aria-label="Log rows">
      <p class="summary" role="status" data-testid="summary">
        {summary}
      </p>
      <div class="table" aria-busy={loading}>
        <div class="thead" aria-hidden="true">
          <span>Time</span>
          <span>Level</span>
          <span>Source</span>
          <span>Stream</span>
          <span>Message</span>
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
          <ul class="rows" style={{ height: `${virtualizer.getTotalSize()}px` }}>
            {virtualizer.getVirtualItems().map((item) => {
              const row = rows[item.index]!;
              const key = String(item.key);
              const open = expanded.has(key);
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
                      {formatLocal(row.timestamp)}
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
                      {displayText(row.message, CELL_CHARS)}
                    </span>
                  </button>
                  {open && (
                    <div class="detail">
                      <pre data-testid="message-detail">{prettyMessage(row.message)}</pre>
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

function sourceNames(catalog?: Catalog): Map<string, string> {
  const names = new Map<string, string>();
  for (const p of catalog?.projects ?? [])
    for (const e of p.environments)
      for (const m of e.moduleInstances) for (const s of m.logSources) names.set(s.key, `${m.name} · ${s.logGroup}`);
  return names;
}
