import { useEffect, useMemo, useState } from 'preact/hooks';
import type { FilterNode } from '../../../src/core/filter-tree/schema.js';
import { invalidRegex } from '../lib/filter-regex.js';
import { formatFilterText, parseFilterText } from '../lib/filter-text.js';
import { unsupportedByPath } from '../lib/unsupported.js';
import { FilterEditor } from './filter-editor.js';

interface Props {
  filter: FilterNode;
  unsupported: string[];
  onChange: (filter: FilterNode) => void;
}

/** The one-line filter for the common case, and the tree editor for the rest; both edit the same `filter`. */
export function FilterBar({ filter, unsupported, onChange }: Props) {
  const spelled = formatFilterText(filter);
  const [text, setText] = useState(spelled ?? '');
  const [error, setError] = useState<string>();
  const [tree, setTree] = useState(spelled === undefined);
  const reasons = useMemo(() => unsupportedByPath(unsupported), [unsupported]);

  // Reasons are shown at their predicates: in the tree.
  useEffect(() => {
    if (reasons.size > 0) setTree(true);
  }, [reasons]);

  // The tree editor (or a shared link) changed the filter: the line follows when it can spell it.
  useEffect(() => {
    const s = formatFilterText(filter);
    if (s !== undefined) setText(s);
  }, [filter]);

  const apply = async () => {
    const parsed = parseFilterText(text);
    if (!parsed.ok) return setError(`${parsed.error} (at character ${parsed.at + 1})`);
    const bad = await invalidRegex(parsed.filter);
    if (bad !== undefined) return setError(`Invalid regex /${bad.value}/: ${bad.message}`);
    setError(undefined);
    onChange(parsed.filter);
  };

  return (
    <section class="filter" aria-label="Filtering">
      <form
        class="filter-line"
        onSubmit={(e) => {
          e.preventDefault();
          void apply();
        }}
      >
        <label for="filter-text">Filter</label>
        <input
          id="filter-text"
          type="search"
          spellcheck={false}
          placeholder={spelled === undefined ? 'edited as a tree' : 'timeout level:error,warn stream:web/* status>=500'}
          value={text}
          aria-invalid={error !== undefined}
          aria-describedby={error ? 'filter-error' : undefined}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <button type="submit">Apply</button>
        <button type="button" aria-expanded={tree} onClick={() => setTree(!tree)}>
          {tree ? 'Hide tree' : 'Edit as tree'}
        </button>
      </form>
      {error && (
        <p id="filter-error" class="error" role="alert">
          {error}
        </p>
      )}
      {tree && <FilterEditor filter={filter} reasons={reasons} onChange={onChange} />}
      {unsupported.length > 0 && (
        <div class="banner unsupported-banner" role="status" data-testid="unsupported-banner">
          The results are broader than the filter: {unsupported.join('; ')}
        </div>
      )}
    </section>
  );
}
