/**
 * Turns taken in a round among keys (tenants) that have work waiting, so that a key with a thousand items
 * waiting and a key with one take turns. A key joins the round at its back and leaves it when nothing of
 * it waits any more (joining again later puts it at the back). The turn is offered to the keys in order,
 * from the one whose turn it is; the keys passed over (that could not take it) and the one that took it
 * then go to the back, in that order. A key does not take two turns in a row while another key waits: the
 * one served last yields to keys that joined behind it while it was alone in the round.
 *
 * Used by FairQueue (slots for heavy work and database connections) and by the embedded database's worker
 * (statements of its one session).
 */
export class RoundRobin<K> {
  /** The keys in the round, in turn order: the one whose turn is next first (a Set keeps insertion order). */
  readonly #round = new Set<K>();
  /** The key that took the last turn. */
  #last: K | undefined;

  /** Keys in the round. */
  get size(): number {
    return this.#round.size;
  }

  has(key: K): boolean {
    return this.#round.has(key);
  }

  /** Joins the round at its back; a key in the round already keeps its place. */
  join(key: K): void {
    this.#round.add(key);
  }

  /** Leaves the round (the others keep their order). */
  leave(key: K): void {
    this.#round.delete(key);
  }

  /**
   * Offers the turn to each key in turn order until `take` takes it (returns something other than undefined),
   * and returns that; undefined when no key took it (the round is then unchanged). `take` must not join or
   * leave the round itself: leave it after, when the key has nothing left waiting.
   */
  next<T>(take: (key: K) => T | undefined): T | undefined {
    if (this.#round.size > 1) {
      const [head] = this.#round;
      // At the head only when it was alone in the round as it took its turn, or left and joined again then.
      if (head === this.#last) this.#toBack(head as K);
    }
    const passed: K[] = [];
    for (const key of this.#round) {
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

  #toBack(key: K): void {
    if (this.#round.delete(key)) this.#round.add(key);
  }
}
