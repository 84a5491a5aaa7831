import { useRef, useState } from 'preact/hooks';
import type { HistogramBucket, HistogramResult } from '../api.js';
import { countTicks, timeTicks } from '../lib/axis.js';
import { formatCount, plural } from '../lib/format.js';
import { formatSeconds, formatUtc } from '../view.js';

export const LEVELS = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'UNKNOWN'] as const;

const WIDTH = 1000;
const HEIGHT = 100;

interface Props {
  data?: HistogramResult;
  window: { startMs: number; endMs: number };
  /** The heading's count (and what the table shows of it). */
  heading: { total: string; shown?: string };
  /** The counts answered an earlier view, or the current one failed: drawn faded. */
  stale?: boolean;
  onZoom: (startMs: number, endMs: number) => void;
}

/** Rows per level of one bucket, most severe first, e.g. "ERROR 3 · WARN 5". */
export function bucketLevels(b: HistogramBucket): string {
  return LEVELS.filter((l) => (b.counts[l] ?? 0) > 0)
    .map((l) => `${l} ${formatCount(b.counts[l]!)}`)
    .join(' · ');
}

export function bucketTotal(b: HistogramBucket): number {
  return Object.values(b.counts).reduce((a, c) => a + c, 0);
}

/**
 * Matching rows per bucket, stacked by level, with a count axis and a time axis; hovering (or ←/→) shows a bucket's
 * time and counts. Click a bar, drag across bars, or press Enter on one, to zoom.
 */
export function Histogram({ data, window, heading, stale, onZoom }: Props) {
  const svg = useRef<SVGSVGElement>(null);
  const [drag, setDrag] = useState<{ from: number; to: number }>();
  const [focus, setFocus] = useState(0);
  const [hover, setHover] = useState<number>();
  const [focused, setFocused] = useState(false);
  const buckets = data?.buckets ?? [];
  const n = buckets.length;
  const totals = buckets.map(bucketTotal);
  const { top, ticks } = countTicks(Math.max(0, ...totals), 2);
  const barWidth = n > 0 ? WIDTH / n : WIDTH;
  const span = Math.max(1, window.endMs - window.startMs + 1);
  const times = timeTicks(window.startMs, window.endMs, 6);
  const shown = hover ?? (n > 0 && focused ? Math.min(focus, n - 1) : undefined);
  const tip = shown === undefined ? undefined : buckets[shown];

  const indexAt = (clientX: number): number => {
    const rect = svg.current!.getBoundingClientRect();
    return Math.min(n - 1, Math.max(0, Math.floor(((clientX - rect.left) / rect.width) * n)));
  };
  const zoomTo = (a: number, b: number) => {
    const lo = buckets[Math.min(a, b)];
    const hi = buckets[Math.max(a, b)];
    if (lo && hi) onZoom(lo.startMs, hi.endMs);
  };

  return (
    <section class={`histogram${stale ? ' stale' : ''}`} aria-label="Histogram">
      <div class="histogram-head">
        <span class="count" data-testid="histogram-total">
          {heading.total}
        </span>
        {heading.shown && (
          <span class="shown" role="status" data-testid="summary">
            {heading.shown}
          </span>
        )}
        <span class="window" data-testid="window">
          <time dateTime={new Date(window.startMs).toISOString()} title={formatUtc(window.startMs)}>
            {formatSeconds(window.startMs)}
          </time>
          {' → '}
          <time dateTime={new Date(window.endMs).toISOString()} title={formatUtc(window.endMs)}>
            {formatSeconds(window.endMs)}
          </time>
        </span>
        <button
          type="button"
          class="link"
          onClick={() => onZoom(window.startMs - Math.floor(span / 2), window.endMs + Math.ceil(span / 2))}
        >
          Zoom out
        </button>
      </div>
      <div class="chart">
        <ul class="y-axis" aria-hidden="true" data-testid="histogram-y-axis">
          {ticks.map((t) => (
            <li key={t.value} style={{ bottom: `${(t.value / top) * 100}%` }}>
              {t.label}
            </li>
          ))}
        </ul>
        <div class="plot">
          <svg
            ref={svg}
            viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
            preserveAspectRatio="none"
            role="img"
            tabIndex={n > 0 ? 0 : -1}
            aria-label={`Rows per time bucket from ${formatSeconds(window.startMs)} to ${formatSeconds(window.endMs)}. Arrow keys choose a bucket, Enter zooms into it.`}
            data-testid="histogram"
            onPointerDown={(e) => {
              if (n === 0) return;
              svg.current!.setPointerCapture(e.pointerId);
              const i = indexAt(e.clientX);
              setDrag({ from: i, to: i });
            }}
            onPointerMove={(e) => {
              if (n === 0) return;
              const i = indexAt(e.clientX);
              setHover(i);
              if (drag) setDrag({ ...drag, to: i });
            }}
            onPointerLeave={() => setHover(undefined)}
            onPointerUp={(e) => {
              if (!drag) return;
              const to = indexAt(e.clientX);
              setDrag(undefined);
              zoomTo(drag.from, to);
            }}
            onKeyDown={(e) => {
              if (e.key === 'ArrowRight') setFocus((f) => Math.min(n - 1, f + 1));
              else if (e.key === 'ArrowLeft') setFocus((f) => Math.max(0, f - 1));
              else if (e.key === 'Enter' || e.key === ' ') zoomTo(focus, focus);
              else return;
              setHover(undefined);
              e.preventDefault();
            }}
            onFocus={() => setFocused(true)}
            onBlur={() => setFocused(false)}
          >
            {ticks.map((t) => (
              <line
                key={t.value}
                class="grid"
                x1={0}
                x2={WIDTH}
                y1={HEIGHT - (t.value / top) * HEIGHT}
                y2={HEIGHT - (t.value / top) * HEIGHT}
              />
            ))}
            {buckets.map((b, i) => {
              let y = HEIGHT;
              return (
                <g key={b.startMs} data-bucket={i} data-count={totals[i]}>
                  {LEVELS.map((level) => {
                    const c = b.counts[level] ?? 0;
                    if (c === 0) return null;
                    const h = (c / top) * HEIGHT;
                    y -= h;
                    return (
                      <rect
                        key={level}
                        class={`bar level-${level.toLowerCase()}`}
                        x={i * barWidth + 0.5}
                        y={y}
                        width={Math.max(0.5, barWidth - 1)}
                        height={h}
                      />
                    );
                  })}
                </g>
              );
            })}
            {drag && (
              <rect
                class="selection"
                x={Math.min(drag.from, drag.to) * barWidth}
                y={0}
                width={(Math.abs(drag.to - drag.from) + 1) * barWidth}
                height={HEIGHT}
              />
            )}
            {n > 0 && <rect class="focus" x={focus * barWidth} y={0} width={barWidth} height={HEIGHT} />}
            {shown !== undefined && <rect class="hover" x={shown * barWidth} y={0} width={barWidth} height={HEIGHT} />}
          </svg>
          {tip && shown !== undefined && (
            <div
              class="tooltip"
              role="tooltip"
              data-testid="histogram-tooltip"
              // At the bucket, shifted by as much of its own width as the bucket is far along: never past the plot.
              style={{ left: `${((shown + 0.5) / n) * 100}%`, transform: `translateX(-${((shown + 0.5) / n) * 100}%)` }}
            >
              <strong>
                {formatSeconds(tip.startMs)} – {formatSeconds(tip.endMs).slice(11)}
              </strong>
              <span>{plural(totals[shown]!, 'row')}</span>
              {totals[shown]! > 0 && <span class="hint">{bucketLevels(tip)}</span>}
            </div>
          )}
        </div>
        <ul class="x-axis" aria-hidden="true" data-testid="histogram-x-axis">
          {times.map((t) => {
            const at = (t.value - window.startMs) / span;
            // A label at either end is kept inside the axis rather than centred on its tick.
            const edge = at > 0.94 ? 'end' : at < 0.04 ? 'start' : undefined;
            return (
              <li key={t.value} class={edge} style={{ left: `${at * 100}%` }}>
                {t.label}
              </li>
            );
          })}
        </ul>
      </div>
    </section>
  );
}
