/**
 * The part of the filter the stream cannot apply upstream, applied in the browser with Berth's own evaluator (RE2
 * for regexes, as on the server). Loaded only when a live tail needs it: it carries the regex engine.
 */
import { matches } from '../../src/core/filter-tree/evaluate.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { parseJsonMessage, type Level } from '../../src/core/log-level.js';

export { splitForTail } from './lib/tail-filter.js';

export function residualMatcher(
  residual: FilterNode,
): (e: { message: string; level: string; logStreamName: string }) => boolean {
  if (residual.kind === 'all') return () => true;
  return (e) =>
    matches(residual, {
      message: e.message,
      level: e.level as Level,
      logStream: e.logStreamName,
      json: parseJsonMessage(e.message),
    });
}
