import { compileFilterPattern } from '../../core/filter-pattern/index.js';
import { foldString } from '../../core/filter-tree/case-fold.js';
import { isLeaf, matches, type FilterNode } from '../../core/filter-tree/index.js';
import { parseJsonMessage } from '../../core/log-level.js';
import type { FilterReply, FilterSpec, FilterTask } from './protocol.js';

/**
 * The filter pool's worker thread (pool.ts): evaluates one batch of messages against a filter tree or a filter
 * pattern. Anything here may run long (a user's regex over a 256 KiB message): the pool terminates the thread
 * when a batch outlives its source's budget, which is why this runs apart from the event loop.
 */

type Evaluate = (task: FilterTask, i: number) => boolean;

// The case-folding table is built on first use (a few hundred milliseconds): build it while the thread starts, so
// no batch pays for it within its budget.
foldString('A');

/** Compiled specs, most recent last; a handful per thread is plenty (one per source being read). */
const MAX_COMPILED = 64;
const compiled = new Map<string, Evaluate>();

function hasFieldLeaf(node: FilterNode): boolean {
  if (isLeaf(node)) return node.kind === 'field';
  if (node.kind === 'all') return false;
  if (node.kind === 'not') return hasFieldLeaf(node.node);
  return node.nodes.some(hasFieldLeaf);
}

function compile(spec: FilterSpec): Evaluate {
  if (spec.kind === 'pattern') {
    const keep = compileFilterPattern(spec.pattern);
    return (task, i) => keep(task.messages[i]!);
  }
  const { filter } = spec;
  // JSON is parsed only when a predicate looks into it: the same parse ingest stores in the json column.
  const json = hasFieldLeaf(filter);
  return (task, i) => {
    const message = task.messages[i]!;
    return matches(filter, {
      message,
      level: task.levels?.[i] ?? 'UNKNOWN',
      logStream: task.streams?.[i] ?? '',
      json: json ? parseJsonMessage(message) : undefined,
    });
  };
}

function evaluatorOf(task: FilterTask): Evaluate {
  let evaluate = compiled.get(task.key);
  if (evaluate === undefined) {
    evaluate = compile(task.spec);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  } else compiled.delete(task.key);
  compiled.set(task.key, evaluate);
  return evaluate;
}

export function filterBatch(task: FilterTask): FilterReply {
  const started = performance.now();
  const evaluate = evaluatorOf(task);
  const keep = new Uint8Array(task.messages.length);
  for (let i = 0; i < keep.length; i++) keep[i] = evaluate(task, i) ? 1 : 0;
  return { keep, elapsedMs: performance.now() - started };
}
