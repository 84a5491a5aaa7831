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
import { AwsStreamSource } from '../providers/aws/log-stream/index.js';
import { AwsAccountIds } from '../providers/aws/account-id.js';
import type { AwsAccount } from '../providers/aws/clients.js';
import { AwsLiveUpstream } from '../providers/aws/log-stream/live-upstream.js';
import { AwsQuotas } from '../providers/aws/quotas.js';
import { AwsQuotaStore } from '../store/aws-quotas.js';
import { openTailCluster } from '../store/log-stream/tail-bus/index.js';
import { SharedTails } from './log-stream/shared-tail.js';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { LocalStreamSource } from '../providers/local/log-stream/source.js';
import { LogStreamService } from './log-stream/service.js';
import { createLogBackends, type LogBackends } from '../providers/log-query/backends.js';
import type { InsightsOptions } from '../providers/aws/log-query/backend.js';
import { LogIngestService } from './log-ingest/service.js';
import { ModuleCategoryService } from './module-categories.js';
import { OrganizationService } from './organizations.js';
import { AuthenticationService } from './authenticate.js';
import { CacheInvalidation, NO_CHANGE_FEED } from './caches/invalidation.js';
import { cacheOptions } from './caches/options.js';
import { openChangeFeed } from '../store/change-feed.js';
import { HealthService } from './health.js';
import { ApiKeyService } from './api-keys.js';
import { FilterPool } from './filter-pool/pool.js';
import { HeavyWork } from './heavy-work.js';
import { IdentityService } from './identity.js';
import { LogCatalogService } from './log-catalog.js';
import { CursorSecret } from './cursor-secret.js';
import { noSignIn, type SignInSettings } from '../sign-in-config.js';
import { SessionService } from './sign-in/sessions.js';
import { PasswordSignIn } from './sign-in/password.js';
import { SignInService } from './sign-in/service.js';
import { IdentityLinks } from './sign-in/identities.js';

/** Ended sessions and abandoned sign-in attempts are removed this often (authentication never needs it). */
const SESSION_SWEEP_MS = 10 * 60_000;

/** Everything route code talks to; built once per process from its dependencies. */
export interface Services {
  authentication: AuthenticationService;
  /** The in-process caches' link to the change feed: `settle()` after a write, `watch()` for the log. */
  caches: CacheInvalidation;
  organizations: OrganizationService;
  /** Who a token is (`GET /me`) and what it can look at in an organization (its log catalog). */
  identity: IdentityService;
  catalog: LogCatalogService;
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
  /** Worker threads for filters evaluated in process (FILTER_WORKERS, LOG_FILTER_CPU_MS). */
  filters: FilterPool;
  /** People signing in: issuers, the password, sessions. */
  signIn: SignInService;
  /** The identities linked to principals (`/me/identities`, an admin's view of a member's). */
  identityLinks: IdentityLinks;
  /** The key sealing list cursors (CURSOR_SECRET, else the one kept in the database); `startServer` loads it at start. */
  cursorSecret: CursorSecret;
  /** Stops background work (pollers, streams) before the database closes. */
  close(): Promise<void>;
}

/** What tests may replace: the providers and their AWS client settings, Insights backend options. */
export interface ServiceOverrides {
  providers?: ProviderOverrides;
  /** Logs Insights backend options over those of `config`. */
  insights?: Partial<Omit<InsightsOptions, 'aws'>>;
  /** How people sign in (loaded from SIGN_IN_CONFIG by the CLI); default: no issuer and no password. */
  signIn?: SignInSettings;
}

export function createServices(store: Store, config: Config, overrides: ServiceOverrides = {}): Services {
  const cached = cacheOptions(config);
  const caches = new CacheInvalidation(cached.maxEntries > 0 ? openChangeFeed(store) : NO_CHANGE_FEED);
  // One AWS client factory for the process: certificates, DNS zones, Insights and the stream source share it.
  const aws = createAwsClients(config, overrides.providers?.aws);
  // Which organization owns an object: one answer for every service (a cache may wrap it).
  const tenancy = cachedTenancy(storeTenancy(store.db), caches, cached);
  const cursorSecret = new CursorSecret(store.db, config.CURSOR_SECRET);
  const domainServices = createDomainServices(
    store.db,
    tenancy,
    config,
    new Providers(store.db, aws, overrides.providers),
    cursorSecret,
  );
  const heavy = new HeavyWork({
    max: config.HEAVY_MAX,
    perOrganization: config.HEAVY_MAX_PER_ORG,
    perPrincipal: config.HEAVY_MAX_PER_PRINCIPAL,
    queueMs: config.HEAVY_QUEUE_MS,
  });
  // AWS quotas (FilterLogEvents rate, Insights queries, Live Tail sessions) per AWS account and region, held in
  // the database for every replica; the AWS account of a cloud account is asked of STS once.
  const accountIds = new AwsAccountIds(aws);
  const quotaStore = new AwsQuotaStore(store.db);
  const awsQuotas = new AwsQuotas(quotaStore, {
    filterLogEventsPerSecond: config.AWS_FILTER_LOG_EVENTS_PER_SECOND,
    insightsMaxConcurrent: config.INSIGHTS_MAX_CONCURRENT_QUERIES,
    liveTailMaxSessions: config.AWS_LIVE_TAIL_MAX_SESSIONS,
    leaseTtlMs: config.AWS_QUOTA_LEASE_TTL_MS,
    // An endpoint without STS (an AWS-compatible stack) keys the quotas by the cloud account instead.
    awsAccountIdOf: (account, signal) => accountIds.getOr(account as AwsAccount, account.id, signal),
  });
  const logBackends = createLogBackends(store, config, aws, { quotas: awsQuotas, ...overrides.insights });
  const awsStream = new AwsStreamSource({ aws, quotas: awsQuotas, lookbackMs: config.TAIL_LOOKBACK_MS });
  // The aws live tail: one upstream per key in the cluster, its holder elected by a lease, its events to every
  // replica through the bus (PostgreSQL, or Redis streams with REDIS_URL; in memory on PGlite).
  const cluster = openTailCluster({
    store,
    redisUrl: config.REDIS_URL,
    replicaId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    leaseTtlMs: config.TAIL_LEASE_TTL_MS,
    bufferMs: config.TAIL_BUFFER_MS,
    bufferRows: config.TAIL_BUFFER_ROWS,
  });
  const shared = new SharedTails({
    bus: cluster.bus,
    leases: cluster.leases,
    upstream: new AwsLiveUpstream({
      source: awsStream,
      clients: aws,
      accountId: (account, signal) => accountIds.get(account as AwsAccount, signal),
      liveTail: config.AWS_LIVE_TAIL === 'on',
      openTimeoutMs: config.AWS_CALL_TIMEOUT_MS,
      lookbackMs: config.TAIL_LOOKBACK_MS,
      pollIntervalMs: config.STREAM_POLL_INTERVAL_MS,
      warmupMs: config.TAIL_WARMUP_MS,
      sessionSlot: (query, sessions, signal) =>
        awsQuotas.liveTailSessions(query.account, query.region, sessions, signal),
    }),
    admit: async (query) => {
      const lease = await quotaStore.tryAcquireSlot(
        `tail-upstreams:${query.account.organizationId}`,
        config.TAIL_MAX_UPSTREAMS_PER_ORG,
        config.AWS_QUOTA_LEASE_TTL_MS,
      );
      return lease === undefined ? undefined : () => void lease.release();
    },
    retentionMs: 2 * config.TAIL_LOOKBACK_MS + config.TAIL_WARMUP_MS,
    leaseRetryMs: Math.max(100, Math.floor(config.TAIL_LEASE_TTL_MS / 3)),
  });
  const filters = new FilterPool({ workers: config.FILTER_WORKERS, cpuBudgetMs: config.LOG_FILTER_CPU_MS });
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
      changes: caches,
      shared,
      warmupWaitMs: config.TAIL_WARMUP_MS,
      filters,
    },
  );
  const logs = new LogQueryService(store.db, tenancy, logBackends.forProvider, {
    sourceTimeoutMs: config.LOG_QUERY_SOURCE_TIMEOUT_MS,
    deadlineMs: config.LOG_QUERY_DEADLINE_MS,
    concurrency: config.LOG_QUERY_CONCURRENCY,
    heavy,
    logSources: cachedLogSources(store.db, caches, cached),
    filters,
  });
  const ingest = new LogIngestService(store.db, config, { heavy, embedded: store.target.kind === 'pglite' });
  const organizations = new OrganizationService(store.db, caches, cached);
  const signInSettings = overrides.signIn ?? noSignIn(config);
  const sessions = new SessionService(store.db, caches, cached, organizations, {
    maxAgeMs: signInSettings.sessionMaxAgeMs,
    idleMs: signInSettings.sessionIdleMs,
  });
  const password = new PasswordSignIn(store.db, {
    hashConcurrency: config.PASSWORD_HASH_CONCURRENCY,
    maxPerAddress: config.SIGN_IN_MAX_PER_ADDRESS,
    failuresPerAccount: config.PASSWORD_FAILURES_PER_ACCOUNT,
    windowMs: config.SIGN_IN_WINDOW_MS,
  });
  const signIn = new SignInService(store.db, signInSettings, sessions, password, organizations, {
    maxPerAddress: config.SIGN_IN_MAX_PER_ADDRESS,
    windowMs: config.SIGN_IN_WINDOW_MS,
  });
  const sweeping = setInterval(() => void sessions.sweep().catch(() => undefined), SESSION_SWEEP_MS).unref();
  return {
    streams,
    logBackends,
    logs,
    authentication: new AuthenticationService(store.db, caches, cached),
    caches,
    organizations,
    signIn,
    identityLinks: new IdentityLinks(store.db),
    identity: new IdentityService(store.db),
    catalog: new LogCatalogService(store.db),
    health: new HealthService(store),
    apiKeys: new ApiKeyService(store.db, cursorSecret),
    categories: new ModuleCategoryService(store.db),
    ingest,
    domains: domainServices.domains,
    nameAvailability: domainServices.nameAvailability,
    certificates: domainServices.certificates,
    heavy,
    filters,
    cursorSecret,
    close: async () => {
      clearInterval(sweeping);
      logs.close();
      streams.close();
      await filters.close();
      shared.close();
      await awsQuotas.close();
      await cluster.bus.close();
      await cluster.leases.close();
      await ingest.close();
      await domainServices.close();
      aws.close();
      await caches.close();
    },
  };
}
