import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualizerOptions,
} from '@tanstack/virtual-core';
import { useLayoutEffect, useReducer, useState } from 'preact/hooks';

type Options = Pick<
  VirtualizerOptions<HTMLElement, HTMLElement>,
  'count' | 'getScrollElement' | 'estimateSize' | 'overscan' | 'getItemKey'
>;

/** TanStack Virtual's framework-free core, bound to Preact: only the rows in view (plus overscan) are rendered. */
export function useVirtualizer(options: Options): Virtualizer<HTMLElement, HTMLElement> {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const resolved: VirtualizerOptions<HTMLElement, HTMLElement> = {
    observeElementRect,
    observeElementOffset,
    scrollToFn: elementScroll,
    ...options,
    onChange: () => rerender(undefined),
  };
  const [instance] = useState(() => new Virtualizer(resolved));
  instance.setOptions(resolved);
  useLayoutEffect(() => instance._didMount(), []);
  useLayoutEffect(() => instance._willUpdate());
  return instance;
}
