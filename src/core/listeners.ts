/**
 * Callbacks told of something in turn (the subscribers of a feed, the watchers of a state): each is called
 * in the order it was added, and one that throws does not keep the call from the others.
 */
export class Listeners<Args extends unknown[]> {
  readonly #listeners = new Set<(...args: Args) => void>();

  get size(): number {
    return this.#listeners.size;
  }

  /** Adds `listener` (once, however often it is added); returns its removal. */
  add(listener: (...args: Args) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Calls every listener with `args`; what one throws is dropped. */
  emit(...args: Args): void {
    for (const listener of this.#listeners) {
      try {
        listener(...args);
      } catch {
        // One failing listener must not keep the call from the others (nor break its caller).
      }
    }
  }
}
