/** The filter tree's limits and vocabulary, without the schema library (the log explorer page imports them). */

export const FILTER_LIMITS = {
  maxDepth: 16,
  maxNodes: 256,
  maxRegexLength: 512,
  maxValueLength: 1024,
  maxPathLength: 256,
  maxInValues: 100,
  maxStreamValueLength: 512,
} as const;

export const TEXT_OPS = ['contains', 'equals', 'startsWith', 'regex'] as const;
export const FIELD_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists', 'in', 'contains'] as const;
export const STREAM_OPS = ['equals', 'prefix'] as const;
export const NODE_KINDS = ['all', 'and', 'or', 'not', 'level', 'text', 'field', 'stream'] as const;

/** A dotted path of JSON object keys; no array indexes, so `a.0` is not a path. */
export const FIELD_PATH_PATTERN = '^[A-Za-z_][A-Za-z0-9_-]*(\\.[A-Za-z_][A-Za-z0-9_-]*)*$';
