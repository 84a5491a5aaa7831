import { insightsCapabilities } from './compile-insights.js';
import { sqlCapabilities } from './compile-sql.js';
import type { FilterCapabilities } from './plan.js';

/** `local`: Berth's own PostgreSQL event table; `insights`: CloudWatch Logs Insights. */
export type FilterBackend = 'local' | 'insights';

export function capabilitiesFor(backend: FilterBackend): FilterCapabilities {
  return backend === 'local' ? sqlCapabilities : insightsCapabilities();
}
