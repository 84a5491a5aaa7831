/**
 * k-way merge of lists each sorted newest first: O(n log k) with a binary
 * heap of list heads, never a concatenate-and-sort.
 */
export interface Sorted {
  timestamp: number;
  eventId: string;
}

/** Newest first; within a millisecond, the greater event id first. */
export function newerFirst(a: Sorted, b: Sorted): number {
  if (a.timestamp !== b.timestamp) return b.timestamp - a.timestamp;
  return a.eventId < b.eventId ? 1 : a.eventId > b.eventId ? -1 : 0;
}

export function* mergeNewestFirst<T extends Sorted>(lists: readonly (readonly T[])[]): Generator<T> {
  // heap of [listIndex, position]
  const heap: [number, number][] = [];
  const head = (h: [number, number]) => lists[h[0]]![h[1]]!;
  const less = (i: number, j: number) => {
    const c = newerFirst(head(heap[i]!), head(heap[j]!));
    return c < 0 || (c === 0 && heap[i]![0] < heap[j]![0]);
  };
  const swap = (i: number, j: number) => {
    const t = heap[i]!;
    heap[i] = heap[j]!;
    heap[j] = t;
  };
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(i, p)) return;
      swap(i, p);
      i = p;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(l, m)) m = l;
      if (r < heap.length && less(r, m)) m = r;
      if (m === i) return;
      swap(i, m);
      i = m;
    }
  };
  lists.forEach((list, i) => {
    if (list.length > 0) {
      heap.push([i, 0]);
      up(heap.length - 1);
    }
  });
  while (heap.length > 0) {
    const top = heap[0]!;
    yield head(top);
    if (top[1] + 1 < lists[top[0]]!.length) {
      heap[0] = [top[0], top[1] + 1];
    } else {
      const last = heap.pop()!;
      if (heap.length === 0) break;
      heap[0] = last;
    }
    down(0);
  }
}
