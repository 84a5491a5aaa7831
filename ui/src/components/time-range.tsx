import {
  fromDateTimeLocal,
  PRESETS,
  toDateTimeLocal,
  windowOf,
  formatLocal,
  formatUtc,
  type TimeRange,
} from '../view.js';

/** Relative presets, or an absolute window in local time (UTC on hover). */
export function TimeRangePicker({ range, onChange }: { range: TimeRange; onChange: (r: TimeRange) => void }) {
  const { startMs, endMs } = windowOf(range);
  const setAbsolute = (start: number | undefined, end: number | undefined) => {
    if (start === undefined || end === undefined || start > end) return;
    onChange({ kind: 'absolute', startMs: start, endMs: end });
  };
  return (
    <fieldset class="range">
      <legend>Time range</legend>
      <label>
        Range
        <select
          value={range.kind === 'relative' ? range.preset : 'absolute'}
          onChange={(e) => {
            const v = e.currentTarget.value;
            if (v === 'absolute') setAbsolute(startMs, endMs);
            else onChange({ kind: 'relative', preset: v });
          }}
        >
          {PRESETS.map((p) => (
            <option key={p.id} value={p.id}>
              {p.label}
            </option>
          ))}
          <option value="absolute">Absolute…</option>
        </select>
      </label>
      {range.kind === 'absolute' && (
        <>
          <label>
            From
            <input
              type="datetime-local"
              step={1}
              value={toDateTimeLocal(startMs)}
              title={formatUtc(startMs)}
              onChange={(e) => setAbsolute(fromDateTimeLocal(e.currentTarget.value), endMs)}
            />
          </label>
          <label>
            To
            <input
              type="datetime-local"
              step={1}
              value={toDateTimeLocal(endMs)}
              title={formatUtc(endMs)}
              onChange={(e) => setAbsolute(startMs, fromDateTimeLocal(e.currentTarget.value))}
            />
          </label>
        </>
      )}
      <p class="window" data-testid="window">
        <time dateTime={new Date(startMs).toISOString()} title={formatUtc(startMs)}>
          {formatLocal(startMs)}
        </time>{' '}
        →{' '}
        <time dateTime={new Date(endMs).toISOString()} title={formatUtc(endMs)}>
          {formatLocal(endMs)}
        </time>
      </p>
    </fieldset>
  );
}
