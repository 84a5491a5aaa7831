import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { compileTrustProxy } from './core/client-address.js';
import { literalUnion, SERVER_LOG_LEVELS } from './core/enums.js';

const Int = (min: number, max: number, def: number) => Type.Integer({ minimum: min, maximum: max, default: def });

/**
 * Every setting Berth reads from the environment. Parsed once at start;
 * nothing else reads process.env.
 */
export const ConfigSchema = Type.Object({
  PORT: Int(0, 65535, 8080),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  BERTH_DATA_DIR: Type.String({ minLength: 1, default: './.berth' }),
  /** The built log explorer (`npm run build` writes it); served at /ui/. Empty: dist/ui of this package. */
  UI_DIR: Type.String({ default: '' }),
  LOG_LEVEL: literalUnion(SERVER_LOG_LEVELS, { default: 'info' }),
  BODY_LIMIT_BYTES: Int(1024, 64 * 1024 * 1024, 1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: Int(100, 600_000, 10_000),
  /** Comma-separated `host` or `host:port` resolvers; empty = the system's. */
  DNS_SERVERS: Type.String({ default: '' }),
  DNS_TIMEOUT_MS: Int(50, 30_000, 2_000),
  DNS_CACHE_TTL_MS: Int(0, 3_600_000, 30_000),
  /** Comma-separated zones the platform keeps for itself. */
  RESERVED_ZONES: Type.String({ default: 'berth.dev,berth.app' }),
  /**
   * Key of the HMAC that seals domain-list and API-key-list cursors. When empty, a random key is generated
   * by the first replica to start and kept in the database (migration 010), shared by every replica; when
   * set, it wins (the same value on every replica). Either way a cursor is also bound to its instance or
   * organization.
   */
  CURSOR_SECRET: Type.String({ default: '' }),
  /**
   * Bearer token that unlocks the per-organization series of GET /metrics (16–1,024 printable ASCII characters).
   * Without it /metrics names no tenant; empty: per-organization series are never served. Never logged.
   */
  METRICS_TOKEN: Type.String({ default: '', pattern: '^([\\x21-\\x7e]{16,1024})?$' }),
  /** Attempts of one AWS call (ACM, Route 53, STS), throttling and 5xx retried with backoff and jitter. */
  AWS_MAX_ATTEMPTS: Int(1, 20, 4),
  /** Upper bound on one AWS call, its retries included. */
  AWS_CALL_TIMEOUT_MS: Int(100, 600_000, 15_000),
  /** How long a certificate validation retry may hold its lease before another replica may take over. */
  CERTIFICATE_RETRY_LEASE_MS: Int(1_000, 3_600_000, 60_000),
  LOG_QUERY_SOURCE_TIMEOUT_MS: Int(100, 600_000, 20_000),
  /** Upper bound on a whole log query: past it, the sources still running are stopped and reported missed. */
  LOG_QUERY_DEADLINE_MS: Int(100, 600_000, 30_000),
  /** Bind parameters one SQL statement built from a request may carry (PostgreSQL's hard limit: 65,535; PGlite breaks at 32,767). */
  MAX_SQL_PARAMS: Int(64, 30_000, 2_000),
  /** Characters of SQL text one statement built from a request may carry. */
  MAX_SQL_BYTES: Int(4_096, 16 * 1024 * 1024, 256 * 1024),
  /** Server-side limit on any statement on PostgreSQL (`statement_timeout`); migrations are exempt. */
  DB_STATEMENT_TIMEOUT_MS: Int(100, 3_600_000, 60_000),
  /**
   * Bound on each in-process cache (API keys, identity providers): entries found, and apart from them
   * entries for unknown keys. 0 turns the caches off. Caches are flushed on every replica when the
   * tables behind them change (PostgreSQL LISTEN/NOTIFY), and bypassed while that is not heard.
   */
  CACHE_MAX_ENTRIES: Int(0, 10_000_000, 10_000),
  /** How long an unknown API key (or organization) is remembered as unknown; 0: not at all. */
  CACHE_MISSING_TTL_MS: Int(0, 2_000, 1_000),
  LOG_QUERY_CONCURRENCY: Int(1, 256, 8),
  INSIGHTS_MAX_GROUPS_PER_QUERY: Int(1, 50, 50),
  INSIGHTS_MAX_CONCURRENT_QUERIES: Int(1, 100, 30),
  INSIGHTS_POLL_INTERVAL_MS: Int(10, 60_000, 500),
  STREAM_POLL_INTERVAL_MS: Int(10, 60_000, 1_000),
  STREAM_KEEPALIVE_MS: Int(100, 600_000, 15_000),
  /** Concurrent log streams of one principal on one organization's accounts. */
  STREAM_MAX_PER_PRINCIPAL: Int(1, 10_000, 10),
  STREAM_MAX_DURATION_MS: Int(1_000, 86_400_000, 3 * 3_600_000),
  STREAM_BATCH_SIZE: Int(1, 10_000, 500),
  /**
   * Late ingestion a live tail still delivers: every subscriber gets every matching event exactly once when its
   * ingestionTime − timestamp is at most this (seams are filled from this far back).
   */
  TAIL_LOOKBACK_MS: Int(0, 600_000, 5_000),
  /** aws tails: `on` reads the live part with StartLiveTail (FilterLogEvents fills the seams); `off` polls FilterLogEvents. */
  AWS_LIVE_TAIL: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** The lease on a tail key's one upstream: renewed every third of this; a dead holder's key is taken over after it. */
  TAIL_LEASE_TTL_MS: Int(500, 60_000, 3_000),
  /** Tail messages between replicas are kept this long, and at most this many per key. */
  TAIL_BUFFER_MS: Int(5_000, 3_600_000, 60_000),
  TAIL_BUFFER_ROWS: Int(100, 1_000_000, 10_000),
  /** A new key's first fill reaches this much further back than the lookback; its cursors wait this long for it. */
  TAIL_WARMUP_MS: Int(0, 120_000, 10_000),
  /** Distinct aws live-tail upstreams (keys) one organization may have open in the whole cluster. */
  TAIL_MAX_UPSTREAMS_PER_ORG: Int(1, 10_000, 10),
  /**
   * FilterLogEvents calls per second per AWS account and region, all replicas together (AWS: 5 in the strictest
   * regions, not adjustable; shared with every other tool of the account).
   */
  AWS_FILTER_LOG_EVENTS_PER_SECOND: Int(1, 100, 5),
  /** Live Tail sessions open at once per AWS account and region, all replicas together (AWS default quota: 15). */
  AWS_LIVE_TAIL_MAX_SESSIONS: Int(1, 10_000, 15),
  /** How long the quota slots (Insights queries, Live Tail sessions) of a replica that died stay taken. */
  AWS_QUOTA_LEASE_TTL_MS: Int(1_000, 600_000, 30_000),
  /**
   * How long one statement of a heavy read (a page of a log query, a history batch, an ingest chunk) may hold the
   * database: heavy reads run as a series of such slices, and other tenants' statements run between them.
   */
  DB_SLICE_MS: Int(5, 10_000, 50),
  /**
   * Worker threads that evaluate filters in process (a log query's regexes and other predicates its backend cannot
   * apply, a stream's filter pattern on local accounts), off the event loop.
   */
  FILTER_WORKERS: Int(1, 64, 1),
  /**
   * CPU time one source of a log query (or one read of a stream) may spend evaluating its filter in process; past it
   * the source is reported in missedSources (a stream ends with logs:filter:too-costly). Regexes whose worst case
   * over one message exceeds it are refused up front with 400 logs:filter:too-costly.
   */
  LOG_FILTER_CPU_MS: Int(10, 600_000, 2_000),
  /** Heavy work (log queries, history reads, ingest requests) running at once in this process. */
  HEAVY_MAX: Int(1, 10_000, 16),
  /** ... of which one organization may run at most this many. */
  HEAVY_MAX_PER_ORG: Int(1, 10_000, 8),
  /** ... and one principal at most this many within one organization. */
  HEAVY_MAX_PER_PRINCIPAL: Int(1, 10_000, 2),
  /** Heavy work that cannot start within this long answers 429 with Retry-After (the identity-provider route waits). */
  HEAVY_QUEUE_MS: Int(0, 600_000, 2_000),
  /**
   * Requests one principal may make per window for one organization (and, apart, those that name none) on this
   * replica, or across replicas with REDIS_URL; 0 turns it off.
   */
  RATE_LIMIT_MAX: Int(0, 100_000_000, 2_000),
  RATE_LIMIT_WINDOW_MS: Int(100, 86_400_000, 10_000),
  /** When set (`redis://…`), request rate limits are counted in Redis and shared by every replica. */
  REDIS_URL: Type.String({ default: '' }),
  /** Failed authentications one client address may cause per window before it is answered 429 without a lookup. */
  FAILED_AUTH_MAX: Int(0, 100_000_000, 100),
  FAILED_AUTH_WINDOW_MS: Int(100, 86_400_000, 10_000),
  /** Time a client has to send its request headers (Node's `headersTimeout`). */
  HEADERS_TIMEOUT_MS: Int(100, 600_000, 10_000),
  /** Time a client has to send its whole request, body included (Node's `requestTimeout`). */
  REQUEST_TIMEOUT_MS: Int(100, 3_600_000, 30_000),
  /**
   * Open client connections at most. At the cap a new connection closes the one idle the longest (no request in
   * flight); only when every connection is busy is the new one closed as it arrives (http/plugins/connections.ts).
   */
  MAX_CONNECTIONS: Int(1, 1_000_000, 4_096),
  /**
   * Open connections one client address may hold (IPv6: one /64); more are closed as they arrive. Peers named in
   * TRUST_PROXY are exempt. 0: no per-address cap.
   */
  MAX_CONNECTIONS_PER_ADDRESS: Int(0, 1_000_000, 256),
  /**
   * Proxies whose X-Forwarded-For is believed (comma-separated addresses, CIDRs, or `loopback`, `linklocal`,
   * `uniquelocal`): the client address is then the nearest untrusted hop. Empty: trust none, the socket's address.
   */
  TRUST_PROXY: Type.String({ default: '' }),
  /** Event-loop delay past which requests are shed with 503 and /readyz answers 503; 0 turns it off. */
  PRESSURE_MAX_EVENT_LOOP_DELAY_MS: Int(0, 600_000, 1_000),
  /** Concurrent log streams per organization and per process (per principal: STREAM_MAX_PER_PRINCIPAL). */
  STREAM_MAX_PER_ORG: Int(1, 1_000_000, 100),
  STREAM_MAX_TOTAL: Int(1, 1_000_000, 2_000),
  /** Local log events one organization may store; past it its oldest events are deleted first. 0: no quota. */
  INGEST_MAX_EVENTS_PER_ORG: Int(0, 1_000_000_000, 1_000_000),
  /** Local log events older than this (by ingestion time) are deleted; 0 keeps them forever. */
  INGEST_RETENTION_MS: Int(0, 100 * 365 * 86_400_000, 30 * 86_400_000),
  /** How long an ingest Idempotency-Key is remembered. */
  INGEST_IDEMPOTENCY_TTL_MS: Int(1_000, 30 * 86_400_000, 86_400_000),
  /**
   * Tests only: SIGUSR2 makes the embedded database's next WAL write fail with EIO, so PostgreSQL
   * PANICs and the instance dies as on a failing disk (the reliability suite checks Berth recovers).
   */
  BERTH_FAULT_INJECTION: Type.Boolean({ default: false }),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Settings whose value never appears in an error message (nor anywhere else Berth writes). */
const SECRET_SETTINGS: ReadonlySet<string> = new Set(['CURSOR_SECRET', 'METRICS_TOKEN']);

/** Parses the environment; a bad value names its variable. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  const known = Object.keys(ConfigSchema.properties);
  const raw: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>;
  Object.assign(converted, overrides);
  const problems = [...Value.Errors(ConfigSchema, converted)].map((e) => {
    const name = e.path.replace(/^\//, '') || '(root)';
    const got = SECRET_SETTINGS.has(name) ? '[redacted]' : JSON.stringify(converted[name]);
    return `${name}: ${e.message} (got ${got})`;
  });
  if (problems.length === 0) {
    try {
      compileTrustProxy(converted.TRUST_PROXY as string);
    } catch (error) {
      problems.push(`TRUST_PROXY: ${(error as Error).message} (got ${JSON.stringify(converted.TRUST_PROXY)})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return converted as Config;
}

export function listSetting(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
