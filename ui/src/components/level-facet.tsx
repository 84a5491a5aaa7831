import { useState } from 'preact/hooks';
import type { Level } from '../../../src/core/log-level.js';
import { formatCount } from '../lib/format.js';
import { LEVELS } from './histogram.js';

interface Props {
  /** Rows per level: the histogram's totals (a query) or the live rows' (a live tail); undefined while counting. */
  counts?: Partial<Record<Level, number>>;
  /** The levels the filter allows (its top-level level condition), undefined when it has none. */
  selected?: Level[];
  /** The counts could not be had (the histogram failed). */
  failed?: boolean;
  /** Where the counts come from, said under them. */
  note: string;
  onToggle: (level: Level) => void;
}

/** The level facet: each level with its count; a click adds it to the filter's levels or takes it out. */
export function LevelFacet({ counts, failed, selected, note, onToggle }: Props) {
  const [open, setOpen] = useState(false);
  const levels = LEVELS.filter((l) => (counts?.[l] ?? 0) > 0 || selected?.includes(l));
  const summary = levels.map((l) => `${l} ${formatCount(counts?.[l] ?? 0)}`).join(' · ');
  return (
    <aside class={`facet${open ? ' open' : ''}`} aria-label="Levels">
      <button type="button" class="facet-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open || !summary ? 'Levels' : `Levels: ${summary}`}
      </button>
      <h2 class="facet-title">Level</h2>
      <ul class="facet-list" data-testid="level-facet">
        {counts === undefined && <li class="hint">{failed ? 'Counts unavailable' : 'Counting…'}</li>}
        {counts !== undefined && levels.length === 0 && <li class="hint">No rows</li>}
        {counts !== undefined &&
          levels.map((l) => {
            const c = counts[l] ?? 0;
            const on = selected?.includes(l) === true;
            return (
              <li key={l}>
                <button
                  type="button"
                  class={`facet-item level-${l.toLowerCase()}`}
                  aria-pressed={on}
                  data-level={l}
                  data-count={c}
                  title={on ? `Stop filtering on ${l}` : `Filter on ${l}${selected ? ' too' : ''}`}
                  onClick={() => onToggle(l)}
                >
                  <span class="swatch" aria-hidden="true" />
                  <span class="name">{l}</span>
                  <span class="n">{formatCount(c)}</span>
                </button>
              </li>
            );
          })}
      </ul>
      <p class="hint facet-note">{note}</p>
    </aside>
  );
}
