import { useRef, useState } from 'preact/hooks';
import type { HistogramResult } from '../api.js';
import { formatLocal } from '../view.js';

export const LEVELS = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'UNKNOWN'] as const;

const WIDTH = 1000;
const HEIGHT = 100;

interface Props {
  data?: HistogramResult;
  window: { startMs: number; endMs: number };
  onZoom: (startMs: number, endMs: number) => void;
}

/** Matching rows per bucket, stacked by level. Click a bar, drag across bars, or use ←/→ and Enter, to zoom. */
export function Histogram({ data, window, onZoom }: Props) {
  const svg = useRef<SVGSVGElement>(null);
  const [drag, setDrag] = useState<{ from: number; to: number }>();
  const [focus, setFocus] = useState(0);
  const buckets = data?.buckets ?? [];
  const n = buckets.length;
  const totals = buckets.map((b) => Object.values(b.counts).reduce((a, c) => a + c, 0));
  const max = Math.max(1, ...totals);
  const sum = totals.reduce((a, c) => a + c, 0);
  const barWidth = n > 0 ? WIDTH / n : WIDTH;

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
    <section class="histogram" aria-label="Histogram">
      <div class="histogram-head">
        <span data-testid="histogram-total">{data ? `${sum.toLocaleString()} matching rows` : 'Counting…'}</span>
        <button
          type="button"
          class="link"
          onClick={() => {
            const span = window.endMs - window.startMs + 1;
            onZoom(window.startMs - Math.floor(span / 2), window.endMs + Math.ceil(span / 2));
          }}
        >
          Zoom out
        </button>
      </div>
      <svg
        ref={svg}
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        tabIndex={n > 0 ? 0 : -1}
        aria-label={`Rows per time bucket from ${formatLocal(window.startMs)} to ${formatLocal(window.endMs)}. Arrow keys choose a bucket, Enter zooms into it.`}
        data-testid="histogram"
        onPointerDown={(e) => {
          if (n === 0) return;
          svg.current!.setPointerCapture(e.pointerId);
          const i = indexAt(e.clientX);
          setDrag({ from: i, to: i });
        }}
        onPointerMove={(e) => drag && setDrag({ ...drag, to: indexAt(e.clientX) })}
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
          e.preventDefault();
        }}
      >
        {buckets.map((b, i) => {
          let y = HEIGHT;
          return (
            <g key={b.startMs} data-bucket={i}>
              <title>
                {formatLocal(b.startMs)}: {totals[i]}
              </title>
              {LEVELS.map((level) => {
                const c = b.counts[level] ?? 0;
                if (c === 0) return null;
                const h = (c / max) * (HEIGHT - 4);
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
      </svg>
      <ul class="legend">
        {LEVELS.map((level) => {
          const c = buckets.reduce((a, b) => a + (b.counts[level] ?? 0), 0);
          return c > 0 ? (
            <li key={level} class={`level-${level.toLowerCase()}`}>
              {level} {c.toLocaleString()}
            </li>
          ) : null;
        })}
      </ul>
    </section>
  );
}
