import type { Config } from '../../config.js';
import type { ProviderKind } from '../../core/enums.js';
import type { Store } from '../../store/db.js';
import type { AwsClients } from '../aws/clients.js';
import { InsightsLogBackend, type InsightsOptions } from '../aws/log-query/backend.js';
import { LocalLogBackend } from '../local/log-query/backend.js';
import type { LogBackend } from './port.js';

export interface LogBackends {
  local: LocalLogBackend;
  aws: InsightsLogBackend;
  forProvider(provider: ProviderKind): LogBackend;
}

/** One backend per provider; route code never knows which one answers. `aws` is the process's client factory. */
export function createLogBackends(
  store: Store,
  config: Config,
  aws: AwsClients,
  insights: Partial<Omit<InsightsOptions, 'aws'>> = {},
): LogBackends {
  const local = new LocalLogBackend(
    store.db,
    store.run,
    { maxParams: config.MAX_SQL_PARAMS, maxBytes: config.MAX_SQL_BYTES },
    { sliceMs: config.DB_SLICE_MS },
  );
  const insightsBackend = new InsightsLogBackend({
    aws,
    maxGroupsPerQuery: config.INSIGHTS_MAX_GROUPS_PER_QUERY,
    maxConcurrentQueries: config.INSIGHTS_MAX_CONCURRENT_QUERIES,
    pollIntervalMs: config.INSIGHTS_POLL_INTERVAL_MS,
    ...insights,
  });
  return {
    local,
    aws: insightsBackend,
    forProvider: (provider) => (provider === 'local' ? local : insightsBackend),
  };
}
