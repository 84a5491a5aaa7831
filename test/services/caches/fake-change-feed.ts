import type { ChangeEvent, ChangeFeed } from '../../../src/store/change-feed.js';

/** A change feed the test drives: it announces changes, drops and listens again when told. */
export class FakeChangeFeed implements ChangeFeed {
  listening = true;
  readonly #listeners = new Set<(event: ChangeEvent) => void>();

  subscribe(listener: (event: ChangeEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  changed(table: string): void {
    this.#emit({ kind: 'changed', table });
  }

  lose(): void {
    this.listening = false;
    this.#emit({ kind: 'lost', error: new Error('dropped by the test') });
  }

  listen(): void {
    this.listening = true;
    this.#emit({ kind: 'listening' });
  }

  settle(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.listening = false;
  }

  #emit(event: ChangeEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}
