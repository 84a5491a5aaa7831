import type { LocalEventInput } from '../../store/log-ingest/events.js';

/** Rows one delete statement (a quota trim, a sweep chunk) removes at most: about one slice of the database. */
export function deleteLimit(sliceMs: number): number {
  return Math.max(100, Math.round(sliceMs * 40));
}

/** Rows per chunk at most, and at least (however slow the database seemed). */
const MAX_CHUNK_ROWS = 5_000;
const MIN_CHUNK_ROWS = 50;

/**
 * Sizes ingest chunks so each transaction holds the database for about `targetMs`: it learns how much work the
 * database does per millisecond from the chunks before (a row costs by its count and its message's length).
 */
export class ChunkSizer {
  /** Work units per millisecond, learned; the first guess is conservative (about 500 short rows per 50 ms). */
  private rate = 10;

  constructor(private readonly targetMs: number) {}

  chunkEnd(rows: LocalEventInput[], start: number): number {
    const budget = this.rate * this.targetMs;
    let units = 0;
    let end = start;
    while (end < rows.length && end - start < MAX_CHUNK_ROWS && (end - start < MIN_CHUNK_ROWS || units < budget)) {
      units += cost(rows[end]!);
      end++;
    }
    return end;
  }

  record(rows: LocalEventInput[], start: number, end: number, elapsedMs: number): void {
    let units = 0;
    for (let i = start; i < end; i++) units += cost(rows[i]!);
    const observed = units / Math.max(1, elapsedMs);
    // Smoothed, so one chunk that waited behind another tenant's statement does not halve the next.
    this.rate = Math.min(1_000, Math.max(0.5, this.rate * 0.7 + observed * 0.3));
  }
}

/** A row's work: one unit, plus one per 512 characters of message (indexing, TOAST, the JSON parse). */
function cost(row: LocalEventInput): number {
  return 1 + row.message.length / 512;
}
