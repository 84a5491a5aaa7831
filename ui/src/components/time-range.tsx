import { useState } from 'preact/hooks';
import { formatSeconds, formatUtc, parseLocalTime, PRESETS, type TimeRange, windowOf } from '../view.js';
import { Popover } from './popover.js';

/** The range as the toolbar shows it: a preset's name, or both ends (the second without its date when it is the same). */
export function shortRangeLabel(range: TimeRange): string {
  if (range.kind === 'relative') return PRESETS.find((p) => p.id === range.preset)?.label ?? range.preset;
  const from = formatSeconds(range.startMs);
  const to = formatSeconds(range.endMs);
  return `${from} → ${to.slice(0, 10) === from.slice(0, 10) ? to.slice(11) : to}`;
}

/** Relative presets, or an absolute window typed in local time as `YYYY-MM-DD HH:mm:ss` (24-hour, UTC on hover). */
export function TimeRangePicker({ range, onChange }: { range: TimeRange; onChange: (r: TimeRange) => void }) {
  return (
    <Popover
      class="range"
      label={
        <>
          <span class="button-kind">Time</span> {shortRangeLabel(range)}
        </>
      }
    >
      {(close) => (
        <RangePanel
          range={range}
          onChange={(r) => {
            onChange(r);
            close();
          }}
        />
      )}
    </Popover>
  );
}

function RangePanel({ range, onChange }: { range: TimeRange; onChange: (r: TimeRange) => void }) {
  const { startMs, endMs } = windowOf(range);
  const [from, setFrom] = useState(formatSeconds(startMs));
  const [to, setTo] = useState(formatSeconds(endMs));
  const [error, setError] = useState<string>();
  const apply = () => {
    const a = parseLocalTime(from);
    const b = parseLocalTime(to);
    if (!a.ok) return setError(`From: ${a.error}`);
    if (!b.ok) return setError(`To: ${b.error}`);
    // Typed to the second: the end second is included whole.
    const end = b.ms + 999;
    if (a.ms > end) return setError('From is after To.');
    setError(undefined);
    onChange({ kind: 'absolute', startMs: a.ms, endMs: end });
  };
  return (
    <div class="range-panel">
      <ul class="presets" aria-label="Relative ranges">
        {PRESETS.map((p) => (
          <li key={p.id}>
            <button
              type="button"
              aria-pressed={range.kind === 'relative' && range.preset === p.id}
              onClick={() => onChange({ kind: 'relative', preset: p.id })}
            >
              {p.label}
            </button>
          </li>
        ))}
      </ul>
      <form
        class="absolute"
        onSubmit={(e) => {
          e.preventDefault();
          apply();
        }}
      >
        <p class="hint">Absolute, local time (YYYY-MM-DD HH:mm:ss, 24-hour)</p>
        <label>
          From
          <input
            value={from}
            spellcheck={false}
            inputMode="numeric"
            placeholder="YYYY-MM-DD HH:mm:ss"
            title={parseUtcTitle(from)}
            aria-invalid={error?.startsWith('From') === true}
            onInput={(e) => setFrom(e.currentTarget.value)}
          />
        </label>
        <label>
          To
          <input
            value={to}
            spellcheck={false}
            inputMode="numeric"
            placeholder="YYYY-MM-DD HH:mm:ss"
            title={parseUtcTitle(to)}
            aria-invalid={error?.startsWith('To') === true}
            onInput={(e) => setTo(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Apply range</button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </div>
  );
}

function parseUtcTitle(text: string): string | undefined {
  const t = parseLocalTime(text);
  return t.ok ? formatUtc(t.ms) : undefined;
}
