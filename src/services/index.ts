import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { ProviderOverrides } from '../providers/index.js';
import type { CertificateRetryService } from './domains/certificate-retry.js';
import { createDomainServices } from './domains/index.js';
import type { DomainService } from './domains/domains.js';
import type { NameAvailabilityService } from './domains/name-availability.js';
import { LogQueryService } from './log-query/service.js';
import { AwsStreamSource } from '../providers/aws/log-stream-source.js';
import { LocalStreamSource } from '../providers/local/log-stream-source.js';
import { LogStreamService } from './log-stream/service.js';
import { createLogBackends, type LogBackends } from '../providers/log-backends.js';
import type { InsightsOptions } from '../providers/aws/log-backend.js';
import { LogIngestService } from './log-ingest.js';
import { ModuleCategoryService } from './module-categories.js';
import { OrganizationService } from './organizations.js';

/** Everything route code talks to; built once per process from its dependencies. */
export interface Services {
  organizations: OrganizationService;
  categories: ModuleCategoryService;
  ingest: LogIngestService;
  logs: LogQueryService;
  logBackends: LogBackends;
  streams: LogStreamService;
  domains: DomainService;
  nameAvailability: NameAvailabilityService;
  certificates: CertificateRetryService;
  /** Stops background work (pollers, streams) before the database closes. */
  close(): Promise<void>;
}

/** What tests may replace: the providers behind domains and certificates, Insights client settings. */
export interface ServiceOverrides {
  providers?: ProviderOverrides;
  /** Logs Insights backend options over those of `config` (tests: `clientOverrides` with a fast retry strategy). */
  insights?: Partial<InsightsOptions>;
}

export function createServices(store: Store, config: Config, overrides: ServiceOverrides = {}): Services {
  const domainServices = createDomainServices(store.db, config, overrides.providers);
  const logBackends = createLogBackends(store, config, overrides.insights);
  const awsStream = new AwsStreamSource({
    aws: logBackends.awsClients,
    clientOverrides: overrides.insights?.clientOverrides,
  });
  const streams = new LogStreamService(
    store.db,
    { local: new LocalStreamSource(store.db), aws: awsStream },
    {
      pollIntervalMs: config.STREAM_POLL_INTERVAL_MS,
      keepAliveMs: config.STREAM_KEEPALIVE_MS,
      maxPerPrincipal: config.STREAM_MAX_PER_PRINCIPAL,
      maxDurationMs: config.STREAM_MAX_DURATION_MS,
      batchSize: config.STREAM_BATCH_SIZE,
    },
  );
  const logs = new LogQueryService(store.db, logBackends.forProvider, {
    sourceTimeoutMs: config.LOG_QUERY_SOURCE_TIMEOUT_MS,
    deadlineMs: config.LOG_QUERY_DEADLINE_MS,
    concurrency: config.LOG_QUERY_CONCURRENCY,
  });
  return {
    streams,
    logBackends,
    logs,
    organizations: new OrganizationService(store.db),
    categories: new ModuleCategoryService(store.db),
    ingest: new LogIngestService(store.db),
    domains: domainServices.domains,
    nameAvailability: domainServices.nameAvailability,
    certificates: domainServices.certificates,
    close: async () => {
      logs.close();
      streams.close();
      awsStream.close();
      logBackends.close();
      await domainServices.close();
    },
  };
}
