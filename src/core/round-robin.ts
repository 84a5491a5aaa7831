/** Parked keys one round keeps at most: a bound on its memory, however many keys give up at once. */
const MAX_PARKED = 1_024;

/**
 * Turns taken in a round among keys (tenants) that have work waiting, so that a key with a thousand items
 * waiting and a key with one take turns. A key joins the round at its back and leaves it when nothing of
 * it waits any more (joining again later puts it at the back). The turn is offered to the keys in order,
 * from the one whose turn it is; the keys passed over (that could not take it) and the one that took it
 * then go to the back, in that order. A key does not take two turns in a row while another key waits: the
 * one served last yields to keys that joined behind it while it was alone in the round.
 *
 * A key whose work gave up waiting (a request refused after its queue time, whose client sends it again) may
 * instead be parked: it is offered no turn, but keeps its place until a given time, and joining again before
 * then puts it back where it was. Without that, work that keeps timing out and coming back would always join
 * behind the keys that never left, and could lose every turn to them.
 *
 * Used by FairQueue (slots for heavy work and database connections) and by the embedded database's worker
 * (statements of its one session).
 */
export class RoundRobin<K> {
  /** The keys in the round, in turn order: the one whose turn is next first (a Set keeps insertion order). */
  readonly #round = new Set<K>();
  /** Keys in `#round` that have nothing waiting but keep their place until the time (Date.now()) given. */
  readonly #parked = new Map<K, number>();
  /** The key that took the last turn. */
  #last: K | undefined;

  /** Keys in the round with work waiting (parked keys not counted). */
  get size(): number {
    return this.#round.size - this.#parked.size;
  }

  /** Whether the key is in the round with work waiting (a parked key is not). */
  has(key: K): boolean {
    return this.#round.has(key) && !this.#parked.has(key);
  }

  /** Joins the round at its back; a key in the round already keeps its place, and a parked key takes its place back. */
  join(key: K): void {
    const parkedUntil = this.#parked.get(key);
    if (parkedUntil !== undefined) {
      this.#parked.delete(key);
      if (parkedUntil > Date.now()) return;
      this.#round.delete(key);
    }
    this.#round.add(key);
  }

  /** Leaves the round (the others keep their order). */
  leave(key: K): void {
    this.#round.delete(key);
    this.#parked.delete(key);
  }

  /**
   * Leaves the round for now but keeps the key's place until `untilMs` (a Date.now() time): joining again before
   * then puts it back where it was. Meanwhile it is offered no turn and passed by without moving.
   */
  park(key: K, untilMs: number): void {
    if (!this.#round.has(key)) return;
    if (this.#parked.size >= MAX_PARKED) this.#expireParked();
    // Past the bound (a flood of requests that each gave up), a key simply leaves.
    if (this.#parked.size >= MAX_PARKED) this.leave(key);
    else this.#parked.set(key, untilMs);
  }

  /**
   * Offers the turn to each key in turn order until `take` takes it (returns something other than undefined),
   * and returns that; undefined when no key took it (the round is then unchanged). `take` must not join or
   * leave the round itself: leave it after, when the key has nothing left waiting.
   */
  next<T>(take: (key: K) => T | undefined): T | undefined {
    if (this.#parked.size > 0) this.#expireParked();
    if (this.size > 1) {
      const head = this.#head();
      // At the head only when it was alone in the round as it took its turn, or left and joined again then.
      if (head === this.#last) this.#toBack(head as K);
    }
    const passed: K[] = [];
    for (const key of this.#round) {
      if (this.#parked.has(key)) continue;
      const taken = take(key);
      if (taken === undefined) {
        passed.push(key);
        continue;
      }
      for (const skipped of passed) this.#toBack(skipped);
      this.#toBack(key);
      this.#last = key;
      return taken;
    }
    return undefined;
  }

  /** The first key in turn order that is not parked. */
  #head(): K | undefined {
    for (const key of this.#round) if (!this.#parked.has(key)) return key;
    return undefined;
  }

  #expireParked(): void {
    const now = Date.now();
    for (const [key, until] of this.#parked) {
      if (until > now) continue;
      this.#parked.delete(key);
      this.#round.delete(key);
    }
  }

  #toBack(key: K): void {
    if (this.#round.delete(key)) this.#round.add(key);
  }
}
