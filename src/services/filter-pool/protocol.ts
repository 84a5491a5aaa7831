import type { FilterNode } from '../../core/filter-tree/index.js';
import type { Level } from '../../core/log-level.js';

/** What a batch is filtered with: a log query's filter tree, or a stream's CloudWatch filter pattern. */
export type FilterSpec = { kind: 'tree'; filter: FilterNode } | { kind: 'pattern'; pattern: string };

/** One batch sent to a worker thread: plain data, copied by structured clone. */
export interface FilterTask {
  /** Identifies the spec, so the worker compiles it once (`JSON.stringify(spec)`). */
  key: string;
  spec: FilterSpec;
  messages: string[];
  /** Per message, for a filter tree (level and stream predicates); absent for a pattern. */
  levels?: Level[];
  streams?: string[];
}

export interface FilterReply {
  /** 1 where the message passes, 0 elsewhere. */
  keep: Uint8Array;
  /** Time the worker spent on the batch, compiling included. */
  elapsedMs: number;
}
