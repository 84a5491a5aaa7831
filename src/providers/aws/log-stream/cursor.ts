/**
 * Tail position on CloudWatch Logs. Every event with a timestamp before `ts`
 * is behind the cursor (history's, already delivered, or later than the
 * lookback allows); `seen` holds the events at or after `ts` that were
 * already delivered, oldest first. `ts` trails the newest read by the
 * lookback, so an event ingested up to `lookbackMs` after its timestamp is
 * still found — and delivered once, because its id is not in `seen`.
 */
export interface AwsCursor {
  ts: number;
  /** `[timestamp, eventId]` of delivered events with timestamp ≥ `ts`, oldest first. */
  seen: [number, string][];
  /** Events at `ts` with an eventId up to this one are behind the cursor too (a compact position, restored). */
  upTo?: string;
  /**
   * Set on the cursor after one part of a read delivered in parts: `[timestamp, eventId]` of the first event
   * not yet delivered. `ts` is at or below it; `compact` never moves past it.
   */
  hold?: [number, string];
  /**
   * After a delivery from a replica's window (see core/tail-window.ts): the bus entry it had reached and the
   * `coveredTo` of that batch. With them a resumed cursor's delivered events are exactly the window's published
   * events from `ts` below `coveredTo` by entries up to `busSeq` (before `hold`), however many: the SSE id need
   * not list them.
   */
  busSeq?: string;
  coveredTo?: number;
  /** Restored with `busSeq`/`coveredTo`: its `seen` is to be rebuilt from a window first (`live.resolve`). */
  pending?: boolean;
}

/**
 * A resume point of the tail, by name: what an SSE id holds of an `AwsCursor` (`compactCursor` chooses it).
 * Its wire form (`AwsWireCursor`) is what the ids of earlier releases hold: the codec keeps it byte for byte.
 */
export interface AwsResumePosition {
  /** Every event before this timestamp is behind (the cursor's `ts`). */
  floor: number;
  /** Events at `floor` with an eventId up to this one are behind too. */
  upTo?: string;
  /** Delivered ids from the floor on (their timestamps are not kept: `floor` is their lower bound). */
  ids: string[];
  /** The bus position of a delivery from a window (`AwsCursor.busSeq`, `coveredTo`, `hold`). */
  bus?: { seq: string; coveredTo: number; hold?: [number, string] };
}

/**
 * `AwsResumePosition` on the wire, in this field order: `t` floor, `a` upTo, `s`/`c`/`h` the bus position
 * (seq, coveredTo, hold), `i` ids.
 */
export interface AwsWireCursor {
  t: number;
  a?: string;
  s?: string;
  c?: number;
  h?: [number, string];
  i: string[];
}

/** JSON bytes of a compact cursor: the SSE id (base64url of the whole resume point) must stay under 4096 characters. */
const COMPACT_BYTES = 2_900;
/** Ids `restore` accepts at most. */
const MAX_RESTORED_IDS = 1_000;
const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const isId = (id: unknown): id is string => typeof id === 'string' && id.length > 0 && id.length <= 256;

export function toWire(p: AwsResumePosition): AwsWireCursor {
  const bus = p.bus;
  return {
    t: p.floor,
    ...(p.upTo === undefined ? {} : { a: p.upTo }),
    ...(bus === undefined ? {} : { s: bus.seq, c: bus.coveredTo, ...(bus.hold === undefined ? {} : { h: bus.hold }) }),
    i: p.ids,
  };
}

/**
 * The resume position of a wire value; undefined when it is not one. A bus position that does not check out is
 * left out (the ids still resume), as is a `hold` that does not.
 */
export function fromWire(value: unknown): AwsResumePosition | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { t, i, a, s, c, h } = value as Partial<Record<keyof AwsWireCursor, unknown>>;
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0) return undefined;
  if (!Array.isArray(i) || i.length > MAX_RESTORED_IDS || !i.every(isId)) return undefined;
  if (a !== undefined && !isId(a)) return undefined;
  const position: AwsResumePosition = { floor: t, ids: i };
  if (a !== undefined) position.upTo = a;
  if (typeof s === 'string' && s.length > 0 && s.length <= 64 && Number.isSafeInteger(c) && (c as number) >= t) {
    position.bus = { seq: s, coveredTo: c as number };
    if (Array.isArray(h) && h.length === 2 && Number.isSafeInteger(h[0]) && isId(h[1]) && (h[0] as number) >= t)
      position.bus.hold = [h[0] as number, h[1] as string];
  }
  return position;
}

/** `position`'s wire form with as many of `ids` as fit in COMPACT_BYTES, in their order. */
function withIdsThatFit(position: Omit<AwsResumePosition, 'ids'>, ids: Iterable<string>): AwsWireCursor {
  const kept: string[] = [];
  let bytes = jsonBytes(toWire({ ...position, ids: [] }));
  for (const id of ids) {
    bytes += jsonBytes(id) + 1;
    if (bytes > COMPACT_BYTES) break;
    kept.push(id);
  }
  return toWire({ ...position, ids: kept });
}

/**
 * `{floor, upTo?, ids}`: the floor, the position in its millisecond when known (ids up to `upTo` there are
 * behind), and the delivered ids from the floor on. When those ids do not fit an SSE id: after a whole read, the
 * resume point moves to the newest delivered millisecond with its ids, or to the newest delivered position in it
 * (late arrivals before it are given up, nothing is repeated). After one part of a read, it never moves past the
 * first undelivered event (`hold`): the point is the position right before it, with as many of the ids delivered
 * beyond it (by earlier reads) as fit — the others would be sent again, none is lost.
 */
export function compactCursor(cursor: AwsCursor): AwsWireCursor {
  const { ts, upTo, seen, hold } = cursor;
  if (cursor.busSeq !== undefined && cursor.coveredTo !== undefined) {
    // The bus position says what was delivered; the ids (as many as fit) are for a replica whose window cannot.
    const bus = { seq: cursor.busSeq, coveredTo: cursor.coveredTo, ...(hold === undefined ? {} : { hold }) };
    return withIdsThatFit(
      { floor: ts, upTo, bus },
      seen.map(([, id]) => id),
    );
  }
  const full = toWire({ floor: ts, upTo, ids: seen.map(([, id]) => id) });
  if (jsonBytes(full) <= COMPACT_BYTES) return full;
  if (hold === undefined) {
    const newest = seen[seen.length - 1]![0];
    const atNewest = seen.filter(([t]) => t === newest).map(([, id]) => id);
    const a = newest === ts ? upTo : undefined;
    const withIds = toWire({ floor: newest, upTo: a, ids: atNewest });
    if (jsonBytes(withIds) <= COMPACT_BYTES) return withIds;
    let position = a;
    for (const id of atNewest) if (position === undefined || id > position) position = id;
    return toWire({ floor: newest, upTo: position, ids: [] });
  }
  const [ht, hid] = hold;
  // Delivered events of that millisecond before the held one are in eventId order below it.
  let a = ht === ts ? upTo : undefined;
  for (const [t, id] of seen) if (t === ht && id < hid && (a === undefined || id > a)) a = id;
  const beyond = seen.filter(([t, id]) => !(t < ht || (t === ht && id < hid))).map(([, id]) => id);
  return withIdsThatFit({ floor: ht, upTo: a }, beyond);
}

/** The cursor an SSE id's resume point stands for; undefined when the value is not one. */
export function restoreCursor(value: unknown): AwsCursor | undefined {
  const position = fromWire(value);
  if (position === undefined) return undefined;
  const { floor, upTo, ids, bus } = position;
  // Their timestamps are not in the id; the floor is a lower bound, and the next read finds the real ones.
  const cursor: AwsCursor = { ts: floor, seen: [...new Set(ids)].map((id): [number, string] => [floor, id]) };
  if (upTo !== undefined) cursor.upTo = upTo;
  if (bus !== undefined) {
    cursor.busSeq = bus.seq;
    cursor.coveredTo = bus.coveredTo;
    cursor.pending = true;
    if (bus.hold !== undefined) cursor.hold = bus.hold;
  }
  return cursor;
}
