import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

let ids = 0;

interface Props {
  /** What the button shows. */
  label: ComponentChildren;
  /** The button's accessible name when `label` is not enough (an icon). */
  ariaLabel?: string;
  title?: string;
  class?: string;
  /** The panel's side: 'start' lines it up with the button's left edge, 'end' with its right edge. */
  align?: 'start' | 'end';
  /** Open or closed from outside (e.g. the filter box opens the recent queries on ↓). */
  open?: boolean;
  onOpenChange?: (open: boolean) => void;
  children: (close: () => void) => ComponentChildren;
}

/**
 * A button that opens a panel under it; the panel closes on Escape (focus back on the button), on a click outside,
 * or when its content calls `close`.
 */
export function Popover({ label, ariaLabel, title, class: cls, align = 'start', open, onOpenChange, children }: Props) {
  const [own, setOwn] = useState(false);
  const shown = open ?? own;
  const set = (v: boolean) => {
    setOwn(v);
    onOpenChange?.(v);
  };
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const [id] = useState(() => `popover-${++ids}`);

  useEffect(() => {
    if (!shown) return;
    const outside = (e: PointerEvent) => {
      if (!root.current?.contains(e.target as Node)) set(false);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      set(false);
      button.current?.focus();
    };
    document.addEventListener('pointerdown', outside, true);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('pointerdown', outside, true);
      document.removeEventListener('keydown', onKey);
    };
  }, [shown]);

  return (
    <div class={`popover${cls ? ` ${cls}` : ''}`} ref={root}>
      <button
        ref={button}
        type="button"
        class="popover-button"
        aria-expanded={shown}
        aria-controls={id}
        aria-label={ariaLabel}
        title={title}
        onClick={() => set(!shown)}
      >
        {label}
      </button>
      {shown && (
        <div id={id} class={`popover-panel align-${align}`}>
          {children(() => set(false))}
        </div>
      )}
    </div>
  );
}
