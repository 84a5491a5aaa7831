import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import { storeTenancy } from '../store/tenancy.js';
import { cachedLogSources } from './caches/cached-log-sources.js';
import { cachedTenancy } from './caches/cached-tenancy.js';
import { Providers, type ProviderOverrides } from '../providers/index.js';
import { createAwsClients } from '../providers/aws/clients.js';
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
import { AuthenticationService } from './authenticate.js';
import { CacheInvalidation, NO_CHANGE_FEED } from './caches/invalidation.js';
import { cacheOptions } from './caches/options.js';
import { openChangeFeed } from '../store/change-feed.js';
import { HealthService } from './health.js';
import { ApiKeyService } from './api-keys.js';
import { HeavyWork } from './heavy-work.js';

/** Everything route code talks to; built once per process from its dependencies. */
export interface Services {
  authentication: AuthenticationService;
  /** The in-process caches' link to the change feed: `settle()` after a write, `watch()` for the log. */
  caches: CacheInvalidation;
  organizations: OrganizationService;
  health: HealthService;
  apiKeys: ApiKeyService;
  categories: ModuleCategoryService;
  ingest: LogIngestService;
  logs: LogQueryService;
  logBackends: LogBackends;
  streams: LogStreamService;
  domains: DomainService;
  nameAvailability: NameAvailabilityService;
  certificates: CertificateRetryService;
  /** The process's budget of heavy work (log queries, history reads, ingest), shared fairly by organizations. */
  heavy: HeavyWork;
  /** Stops background work (pollers, streams) before the database closes. */
  close(): Promise<void>;
}

/** What tests may replace: the providers and their AWS client settings, Insights backend options. */
export interface ServiceOverrides {
  providers?: ProviderOverrides;
  /** Logs Insights backend options over those of `config`. */
  insights?: Partial<Omit<InsightsOptions, 'aws'>>;
}

export function createServices(store: Store, config: Config, overrides: ServiceOverrides = {}): Services {
  const cached = cacheOptions(config);
  const caches = new CacheInvalidation(cached.maxEntries > 0 ? openChangeFeed(store) : NO_CHANGE_FEED);
  // One AWS client factory for the process: certificates, DNS zones, Insights and the stream source share it.
  const aws = createAwsClients(config, overrides.providers?.aws);
  // Which organization owns an object: one answer for every service (a cache may wrap it).
  const tenancy = cachedTenancy(storeTenancy(store.db), caches, cached);
  const domainServices = createDomainServices(
    store.db,
    tenancy,
    config,
    new Providers(store.db, aws, overrides.providers),
  );
  const heavy = new HeavyWork({
    max: config.HEAVY_MAX,
    perOrganization: config.HEAVY_MAX_PER_ORG,
    perPrincipal: config.HEAVY_MAX_PER_PRINCIPAL,
    queueMs: config.HEAVY_QUEUE_MS,
  });
  const logBackends = createLogBackends(store, config, aws, overrides.insights);
  const awsStream = new AwsStreamSource({ aws });
  const streams = new LogStreamService(
    store.db,
    { local: new LocalStreamSource(store.db, { slices: { sliceMs: config.DB_SLICE_MS } }), aws: awsStream },
    {
      pollIntervalMs: config.STREAM_POLL_INTERVAL_MS,
      keepAliveMs: config.STREAM_KEEPALIVE_MS,
      maxPerPrincipal: config.STREAM_MAX_PER_PRINCIPAL,
      maxPerOrganization: config.STREAM_MAX_PER_ORG,
      maxTotal: config.STREAM_MAX_TOTAL,
      heavy,
      maxDurationMs: config.STREAM_MAX_DURATION_MS,
      batchSize: config.STREAM_BATCH_SIZE,
    },
  );
  const logs = new LogQueryService(store.db, tenancy, logBackends.forProvider, {
    sourceTimeoutMs: config.LOG_QUERY_SOURCE_TIMEOUT_MS,
    deadlineMs: config.LOG_QUERY_DEADLINE_MS,
    concurrency: config.LOG_QUERY_CONCURRENCY,
    heavy,
    logSources: cachedLogSources(store.db, caches, cached),
  });
  const ingest = new LogIngestService(store.db, config, { heavy, embedded: store.target.kind === 'pglite' });
  return {
    streams,
    logBackends,
    logs,
    authentication: new AuthenticationService(store.db, caches, cached),
    caches,
    organizations: new OrganizationService(store.db, caches, cached),
    health: new HealthService(store),
    apiKeys: new ApiKeyService(store.db, config.CURSOR_SECRET),
    categories: new ModuleCategoryService(store.db),
    ingest,
    domains: domainServices.domains,
    nameAvailability: domainServices.nameAvailability,
    certificates: domainServices.certificates,
    heavy,
    close: async () => {
      logs.close();
      streams.close();
      await ingest.close();
      await domainServices.close();
      aws.close();
      await caches.close();
    },
  };
}
