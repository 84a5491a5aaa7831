import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { FairQueue } from '../../core/fair-queue.js';
import { filterPatternRegexCosts, filterTreeRegexCosts, REGEX_STEPS_PER_MS } from '../../core/filter-cost.js';
import { prepareCaseFolding } from '../../core/filter-tree/case-fold.js';
import { isLeaf, type FilterNode } from '../../core/filter-tree/index.js';
import type { Level } from '../../core/log-level.js';
import { fairnessKey } from '../../core/tenant-context.js';
import type { FilterReply, FilterSpec, FilterTask } from './protocol.js';

export type { FilterSpec } from './protocol.js';

export interface FilterPoolOptions {
  /** Worker threads (FILTER_WORKERS). */
  workers: number;
  /** CPU time one run (a source of a log query, a read of a stream) may spend (LOG_FILTER_CPU_MS). */
  cpuBudgetMs: number;
  /** Messages per batch at most. */
  batchRows?: number;
  /** Message characters per batch at most (a batch holds at least one message, whatever its length). */
  batchChars?: number;
}

/** What a run filters: the message, and for a filter tree the row's level and stream. */
export interface FilterInput {
  message: string;
  level?: Level;
  logStream?: string;
}

/**
 * A run spent its CPU budget: its batch was stopped (the worker thread terminated), or `predicted`: a message's
 * worst case (its regexes' program size × its length) exceeded what was left, so the batch never ran.
 */
export class FilterBudgetError extends Error {
  override name = 'FilterBudgetError';
  constructor(
    readonly budgetMs: number,
    readonly predicted = false,
  ) {
    super(
      predicted
        ? `the filter could run past its CPU budget of ${budgetMs} ms on one message; it was not run`
        : `the filter ran past its CPU budget of ${budgetMs} ms`,
    );
  }
}

/** What the pool has done since start (for /metrics). */
export interface FilterPoolStats {
  batches: number;
  messages: number;
  /** Time spent in worker threads on batches that finished. */
  cpuSeconds: number;
  /** Batches stopped at their run's budget (each cost a worker thread, replaced). */
  stopped: number;
  /** Batches not run: a message's worst case exceeded what was left of the run's budget. */
  refused: number;
}

const DEFAULT_BATCH_ROWS = 2_000;
const DEFAULT_BATCH_CHARS = 1024 * 1024;

/**
 * Where CPU work a request brings runs (docs/decisions.md, "CPU work off the event loop"): a filter tree's
 * in-process predicates (regexes, case-insensitive text, JSON fields) and a stream's filter pattern, evaluated in
 * worker threads so the event loop never waits on them. Batches are bounded; waiting batches take turns across
 * tenants (the same fairness key as the database's queues); each run has a CPU budget, and a batch still running
 * when its run's budget is spent is stopped by terminating its thread (the pool starts another).
 */
export class FilterPool {
  #pool: Piscina | undefined;
  #starting: Promise<Piscina> | undefined;
  readonly #turns: FairQueue;
  readonly #stats: FilterPoolStats = { batches: 0, messages: 0, cpuSeconds: 0, stopped: 0, refused: 0 };
  #closed = false;
  /** Threads ready to take a batch (started and loaded), and batches running on threads. */
  #ready = 0;
  #running = 0;
  #onReady: (() => void)[] = [];

  constructor(readonly options: FilterPoolOptions) {
    this.#turns = new FairQueue({ max: Math.max(1, options.workers) });
  }

  get stats(): Readonly<FilterPoolStats> {
    return this.#stats;
  }

  /** Counts a batch refused before it ran. */
  countRefused(): void {
    this.#stats.refused += 1;
  }

  /** Batches waiting for a thread now. */
  get waiting(): number {
    return this.#turns.waiting;
  }

  /** A run with its own budget of `budgetMs` (by default `cpuBudgetMs`). */
  start(spec: FilterSpec, budgetMs = this.options.cpuBudgetMs): FilterRun {
    return new FilterRun(this, spec, { ...this.options, cpuBudgetMs: budgetMs });
  }

  /** Runs one batch within `timeoutMs` of the worker's time, in this tenant's turn. */
  async runBatch(task: FilterTask, timeoutMs: number, budgetMs: number, signal?: AbortSignal): Promise<FilterReply> {
    const release = await this.#turns.acquire({ group: fairnessKey() }, { signal });
    const budget = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    this.#running += 1;
    try {
      const threads = await this.#threads();
      // The budget counts the batch's own time: a thread that is starting (after one was stopped) is waited for first.
      while (this.#ready < this.#running) await this.#threadReady(signal);
      timer = setTimeout(() => budget.abort(), Math.max(1, timeoutMs));
      const reply = (await threads.run(task, {
        signal: signal === undefined ? budget.signal : AbortSignal.any([signal, budget.signal]),
      })) as FilterReply;
      this.#stats.batches += 1;
      this.#stats.messages += task.messages.length;
      this.#stats.cpuSeconds += reply.elapsedMs / 1000;
      return reply;
    } catch (error) {
      if (!budget.signal.aborted) throw error;
      this.#stats.stopped += 1;
      throw new FilterBudgetError(budgetMs);
    } finally {
      clearTimeout(timer);
      this.#running -= 1;
      release();
    }
  }

  #threadReady(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      signal?.throwIfAborted();
      const onAbort = () => {
        this.#onReady = this.#onReady.filter((f) => f !== done);
        reject(signal?.reason);
      };
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#onReady.push(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Starts the threads (a server does at start; otherwise the first batch does), and builds the case-folding
   * classes that planning a case-insensitive filter reads on the main thread, so that no request builds them.
   */
  async warm(): Promise<void> {
    const threads = this.#threads();
    prepareCaseFolding();
    await threads;
  }

  /** Stops the threads; batches still running are abandoned. Safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true;
    const starting = this.#starting;
    this.#starting = undefined;
    await starting?.catch(() => undefined);
    await this.#pool?.destroy();
    this.#pool = undefined;
  }

  /**
   * Threads start with the first batch: most processes (and tests) never filter in process. Piscina counts its first
   * threads ready before they have loaded the worker, so each is sent an empty batch first; after that its own
   * events say when a thread that replaces a stopped one is ready.
   */
  #threads(): Promise<Piscina> {
    if (this.#closed) return Promise.reject(new Error('the filter pool is closed'));
    this.#starting ??= (async () => {
      const workers = Math.max(1, this.options.workers);
      const pool = new Piscina({
        filename: workerFile(),
        name: 'filterBatch',
        minThreads: workers,
        maxThreads: workers,
        idleTimeout: Number.POSITIVE_INFINITY,
        concurrentTasksPerWorker: 1,
      });
      this.#pool = pool;
      const empty: FilterTask = { key: '', spec: { kind: 'pattern', pattern: '' }, messages: [] };
      await Promise.all(Array.from({ length: workers }, () => pool.run(empty)));
      this.#ready = workers;
      pool.on('workerCreate', () => {
        this.#ready += 1;
        const waiting = this.#onReady;
        this.#onReady = [];
        for (const wake of waiting) wake();
      });
      pool.on('workerDestroy', () => {
        this.#ready -= 1;
      });
      return pool;
    })();
    return this.#starting;
  }
}

/**
 * One evaluation with its own CPU budget: a source of a log query, or one read of a stream. Its batches run one
 * after another, so sources of other tenants take turns with them.
 */
export class FilterRun {
  readonly #key: string;
  /** The spec's regexes' program sizes summed: their worst-case cost per message character. */
  readonly #stepsPerChar: number;
  /** The kinds of leaves a filter tree has (a pattern looks at messages only). */
  readonly #uses: ReadonlySet<string>;
  readonly #budgetMs: number;
  #remainingMs: number;
  readonly #batchRows: number;
  readonly #batchChars: number;

  constructor(
    private readonly pool: FilterPool,
    private readonly spec: FilterSpec,
    options: FilterPoolOptions,
  ) {
    this.#key = JSON.stringify(spec);
    const regexes = spec.kind === 'tree' ? filterTreeRegexCosts(spec.filter) : filterPatternRegexCosts(spec.pattern);
    this.#stepsPerChar = regexes.reduce((sum, r) => sum + r.programSize, 0);
    this.#uses = spec.kind === 'tree' ? leafKinds(spec.filter) : new Set();
    this.#budgetMs = options.cpuBudgetMs;
    this.#remainingMs = options.cpuBudgetMs;
    this.#batchRows = Math.max(1, options.batchRows ?? DEFAULT_BATCH_ROWS);
    this.#batchChars = Math.max(1, options.batchChars ?? DEFAULT_BATCH_CHARS);
  }

  /** CPU time this run may still spend. */
  get remainingMs(): number {
    return this.#remainingMs;
  }

  /** 1 for each input that passes, 0 elsewhere. Rejects with {@link FilterBudgetError} past the budget. */
  async keep(inputs: readonly FilterInput[], signal?: AbortSignal): Promise<Uint8Array> {
    const keep = new Uint8Array(inputs.length);
    for (let start = 0; start < inputs.length; ) {
      let end = start;
      let chars = 0;
      let longest = 0;
      while (end < inputs.length && end - start < this.#batchRows && (end === start || chars < this.#batchChars)) {
        const length = inputs[end]!.message.length;
        chars += length;
        longest = Math.max(longest, length);
        end += 1;
      }
      // Known before running: one message alone could outlast what is left of the budget.
      if ((this.#stepsPerChar * longest) / REGEX_STEPS_PER_MS > this.#remainingMs) {
        this.pool.countRefused();
        throw new FilterBudgetError(this.#budgetMs, true);
      }
      const slice = inputs.slice(start, end);
      const task: FilterTask = { key: this.#key, spec: this.spec, messages: slice.map((r) => r.message) };
      // Only what the filter looks at is copied to the thread.
      if (this.#uses.has('level')) task.levels = slice.map((r) => r.level ?? 'UNKNOWN');
      if (this.#uses.has('stream')) task.streams = slice.map((r) => r.logStream ?? '');
      if (this.#remainingMs <= 0) throw new FilterBudgetError(this.#budgetMs);
      const reply = await this.pool.runBatch(task, this.#remainingMs, this.#budgetMs, signal);
      this.#remainingMs -= reply.elapsedMs;
      keep.set(reply.keep, start);
      start = end;
    }
    return keep;
  }

  /** The inputs that pass, in order. */
  async select<T extends FilterInput>(inputs: readonly T[], signal?: AbortSignal): Promise<T[]> {
    const keep = await this.keep(inputs, signal);
    return inputs.filter((_, i) => keep[i] === 1);
  }
}

function leafKinds(node: FilterNode, into = new Set<string>()): Set<string> {
  if (isLeaf(node)) into.add(node.kind);
  else if (node.kind === 'not') leafKinds(node.node, into);
  else if (node.kind === 'and' || node.kind === 'or') for (const child of node.nodes) leafKinds(child, into);
  return into;
}

/** worker.js beside this file in dist/; from the TypeScript source, a loader for worker.ts (worker-from-source.cjs). */
function workerFile(): string {
  const own = import.meta.url;
  return fileURLToPath(new URL(own.endsWith('.ts') ? './worker-from-source.cjs' : './worker.js', own));
}
