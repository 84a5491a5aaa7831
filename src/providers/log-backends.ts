import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import { AwsClients } from './aws/clients.js';
import { InsightsLogBackend, type InsightsOptions } from './aws/log-backend.js';
import { LocalLogBackend } from './local/log-backend.js';
import type { LogBackend } from './log-backend.js';

export interface LogBackends {
  local: LocalLogBackend;
  aws: InsightsLogBackend;
  /** The SDK client settings of every account, shared with the stream source. */
  awsClients: AwsClients;
  forProvider(provider: 'local' | 'aws'): LogBackend;
  close(): void;
}

/** One backend per provider; route code never knows which one answers. */
export function createLogBackends(store: Store, config: Config, insights: Partial<InsightsOptions> = {}): LogBackends {
  const local = new LocalLogBackend(store.db, store.run, {
    maxParams: config.MAX_SQL_PARAMS,
    maxBytes: config.MAX_SQL_BYTES,
  });
  const awsClients = new AwsClients({
    maxAttempts: config.AWS_MAX_ATTEMPTS,
    callTimeoutMs: config.AWS_CALL_TIMEOUT_MS,
  });
  const aws = new InsightsLogBackend({
    aws: awsClients,
    maxGroupsPerQuery: config.INSIGHTS_MAX_GROUPS_PER_QUERY,
    maxConcurrentQueries: config.INSIGHTS_MAX_CONCURRENT_QUERIES,
    pollIntervalMs: config.INSIGHTS_POLL_INTERVAL_MS,
    ...insights,
  });
  return {
    local,
    aws,
    awsClients,
    forProvider: (provider) => (provider === 'local' ? local : aws),
    close: () => {
      aws.close();
      awsClients.close();
    },
  };
}
