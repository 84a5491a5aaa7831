import { useEffect, useRef } from 'preact/hooks';
import type { RecentQuery } from '../lib/recent.js';
import { FilterHelp } from './filter-help.js';
import { Popover } from './popover.js';

interface Props {
  text: string;
  onText: (text: string) => void;
  /** Runs the line (Enter, Run, an example, a recent query's filter). */
  onRun: (text: string) => void;
  error?: string;
  /** The filter is a tree the line cannot spell. */
  treeOnly: boolean;
  recent: RecentQuery[];
  onRecent: (entry: RecentQuery) => void;
  recentOpen: boolean;
  onRecentOpen: (open: boolean) => void;
}

export const PLACEHOLDER = 'timeout level:error,warn stream:web/* status>=500 -"health check"';

/** The one-line filter, its syntax help, recent queries and Run: one form of the toolbar. */
export function FilterBox({ text, onText, onRun, error, treeOnly, recent, onRecent, recentOpen, onRecentOpen }: Props) {
  return (
    <form
      class="filter-form"
      onSubmit={(e) => {
        e.preventDefault();
        onRun(text);
      }}
    >
      <label for="filter-text" class="visually-hidden">
        Filter
      </label>
      <input
        id="filter-text"
        type="search"
        spellcheck={false}
        autocomplete="off"
        placeholder={treeOnly ? 'edited as a tree' : PLACEHOLDER}
        title="Filter (press / to come here, ↓ for recent queries)"
        value={text}
        aria-invalid={error !== undefined}
        aria-describedby={error ? 'filter-error' : undefined}
        onInput={(e) => onText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' && recent.length > 0) {
            e.preventDefault();
            onRecentOpen(true);
          }
        }}
      />
      <Popover class="help" label="?" ariaLabel="Filter syntax help" title="Filter syntax and examples" align="end">
        {(close) => (
          <FilterHelp
            onExample={(example) => {
              close();
              onText(example);
              onRun(example);
            }}
          />
        )}
      </Popover>
      <Popover
        class="recent"
        label="↺"
        ariaLabel="Recent queries"
        title="Recent queries (↓ in the filter box)"
        align="end"
        open={recentOpen}
        onOpenChange={onRecentOpen}
      >
        {(close) =>
          recent.length === 0 ? (
            <p class="hint recent-empty">Queries you run appear here.</p>
          ) : (
            <RecentList
              recent={recent}
              onPick={(r) => {
                close();
                onRecent(r);
              }}
            />
          )
        }
      </Popover>
      <button type="submit" class="primary">
        Run
      </button>
    </form>
  );
}

function RecentList({ recent, onPick }: { recent: RecentQuery[]; onPick: (r: RecentQuery) => void }) {
  const list = useRef<HTMLUListElement>(null);
  // Opened from the filter box with ↓: the first entry takes the focus; ↑/↓ move between entries.
  useEffect(() => list.current?.querySelector('button')?.focus(), []);
  return (
    <ul
      class="recent-list"
      aria-label="Recent queries"
      ref={list}
      onKeyDown={(e) => {
        if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
        e.preventDefault();
        const buttons = [...(list.current?.querySelectorAll('button') ?? [])];
        const i = buttons.indexOf(document.activeElement as HTMLButtonElement);
        buttons[Math.max(0, Math.min(buttons.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)))]?.focus();
      }}
    >
      {recent.map((r) => (
        <li key={r.search}>
          <button type="button" onClick={() => onPick(r)}>
            <code>{r.filterText === '' ? '(no filter)' : r.filterText}</code>
            <span class="hint">
              {r.rangeLabel} · {r.sourceLabel}
            </span>
          </button>
        </li>
      ))}
    </ul>
  );
}
