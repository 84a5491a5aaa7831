export * from './schema.js';
export { parseFilter } from './parse.js';
export { matches, type FilterRow } from './evaluate.js';
export { planFilter, simplifyFilter, describeLeaf, type FilterCapabilities, type FilterPlan } from './plan.js';
export {
  compileSqlFilter,
  compileBoundedSqlFilter,
  canPushToSql,
  regexPrefilter,
  sqlCapabilities,
  sqlSize,
  type SqlBounds,
  type SqlFilterColumns,
} from './compile-sql.js';
export {
  compileInsightsFilter,
  insightsCapabilities,
  MAX_INSIGHTS_FILTER_LENGTH,
  type InsightsFilter,
  type InsightsCapabilityOptions,
} from './compile-insights.js';
export { capabilitiesFor, type FilterBackend } from './capabilities.js';
