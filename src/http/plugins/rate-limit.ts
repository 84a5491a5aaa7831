import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { appError } from '../../core/errors.js';

/**
 * The identity-provider route's declared statuses are 400/401/403/422/500 (docs/design.md#1-identity-providers): it
 * never answers 429 or 503. It is served from an in-process cache, so exempting it from the request limits and load
 * shedding costs next to nothing.
 */
const IDENTITY_PROVIDER_OPERATION = 'getPermittedIdentityProviders';

export function operationOf(request: FastifyRequest): string | undefined {
  return (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
}

export function isIdentityProviderRoute(request: FastifyRequest): boolean {
  return operationOf(request) === IDENTITY_PROVIDER_OPERATION;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests refused by the guards, for the metrics. */
    throttled: ThrottleStats;
  }
}

export type ThrottleReason = 'principal' | 'failed-auth' | 'pressure';

/** Organizations whose figures are kept; the least recently counted go first past it. */
const MAX_TRACKED_ORGANIZATIONS = 10_000;

/**
 * Requests refused by the guards (request rate, failed authentication, load shedding), by reason and by
 * organization where one is known (`''` otherwise): read by the metrics as `berth_rate_limited_total`.
 */
export class ThrottleStats {
  readonly #counts = new LRUCache<string, { organization: string; reason: ThrottleReason; count: number }>({
    max: MAX_TRACKED_ORGANIZATIONS * 3,
  });

  count(reason: ThrottleReason, organization = ''): void {
    const key = `${reason} ${organization}`;
    const entry = this.#counts.get(key);
    if (entry !== undefined) entry.count += 1;
    else this.#counts.set(key, { organization, reason, count: 1 });
  }

  /** Every (organization, reason) counted so far, with its count. */
  *entries(): IterableIterator<{ organization: string; reason: ThrottleReason; count: number }> {
    for (const entry of this.#counts.values()) yield { ...entry };
  }
}

/** Routes under `/organizations/{param}/…`: the parameter right after `organizations` is an organization's id. */
const ORGANIZATION_ROUTE = /^\/organizations\/:([A-Za-z][A-Za-z0-9]*)(?:\/|$)/;

/** The organization a route's path names (`/organizations/{id}/…`), whoever the caller is; else undefined. */
export function organizationInPath(request: FastifyRequest): string | undefined {
  const param = ORGANIZATION_ROUTE.exec(request.routeOptions.url ?? '')?.[1];
  if (param === undefined) return undefined;
  const value = (request.params as Record<string, unknown> | undefined)?.[param];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The organization whose share of its principal a request counts in, as far as it is known before the body is
 * read (from the key and the path: the query string names only objects, whose organization takes a lookup):
 * a scoped key's organization (the only one it acts in); else the organization the path names, when the caller
 * is a member there; else none, and the request counts in the principal's own share, apart from every
 * organization's. So a key another organization's admin minted for a principal counts only in that
 * organization's share, and cannot use up the share of the principal's other organizations, nor of its own
 * unscoped keys. Only memberships open an organization's share: an unscoped key naming organizations it has no
 * role in (or a superadmin's, which may read them all) would otherwise get a fresh share for each name.
 */
export function requestOrganization(request: FastifyRequest): string | undefined {
  const caller = request.caller;
  if (caller === null) return undefined;
  if (caller.keyOrganizationId !== null) return caller.keyOrganizationId;
  const named = organizationInPath(request);
  return named !== undefined && caller.memberships.has(named) ? named : undefined;
}

/**
 * A principal's rate-limit key within an organization, or its own outside any. Ids are encoded so that neither
 * can pass for the other's separator.
 */
export function rateLimitKey(principalId: string, organizationId: string | undefined): string {
  const principal = `principal:${encodeURIComponent(principalId)}`;
  return organizationId === undefined ? principal : `${principal}:org:${encodeURIComponent(organizationId)}`;
}

/** Seconds for Retry-After: whole, at least 1. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

export interface RateLimitOptions {
  config: Pick<Config, 'RATE_LIMIT_MAX' | 'RATE_LIMIT_WINDOW_MS' | 'REDIS_URL'>;
  stats: ThrottleStats;
}

/**
 * Request limit per principal within an organization (RATE_LIMIT_MAX per RATE_LIMIT_WINDOW_MS; which
 * organization: {@link requestOrganization}) for the authenticated scope: register it in that scope after the
 * authentication hook. Its hook is `onRequest` at route level, which Fastify runs after the scope's own
 * `onRequest` hooks: the principal is known, and the body of a refused request is never read. Counted in this
 * process, or in Redis (shared by every replica) when REDIS_URL is set.
 */
export async function installRateLimit(api: FastifyInstance, { config, stats }: RateLimitOptions): Promise<void> {
  if (config.RATE_LIMIT_MAX === 0) return;
  const local = new LocalWindowStore();
  let store: FastifyRateLimitStore = local;
  if (config.REDIS_URL !== '') {
    const redis = connectRedis(config.REDIS_URL, api.log);
    api.addHook('onClose', async () => {
      redis.disconnect();
    });
    // Requests before the first connection would be counted in the process: give it a moment at start.
    await firstConnection(redis, REDIS_START_WAIT_MS);
    store = new RedisWindowStore(redis, local, api.log);
  }
  await api.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW_MS,
    // The authentication hook has run: every request here has a caller.
    keyGenerator: (request) =>
      request.caller === null
        ? `address:${request.ip}`
        : rateLimitKey(request.caller.principalId, requestOrganization(request)),
    allowList: (request) => isIdentityProviderRoute(request),
    store: class {
      constructor() {
        // biome-ignore lint/correctness/noConstructorReturn: the plugin instantiates the store it is given.
        return store;
      }
    } as never,
    errorResponseBuilder: (request, context) => {
      const organizationId = requestOrganization(request);
      stats.count('principal', organizationId);
      const share = organizationId === undefined ? 'outside any organization' : `in organization ${organizationId}`;
      return appError('http:request:rate-limited', {
        description: `More than ${context.max} requests in ${config.RATE_LIMIT_WINDOW_MS} ms from this principal ${share}.`,
        headers: { 'retry-after': retryAfterSeconds(context.ttl) },
      });
    },
  });
}

interface Window {
  current: number;
  ttl: number;
}
type Done = (error: Error | null, result?: Window) => void;

/** Windows (a principal's in an organization) kept in this process; the least recently seen go first (restarting). */
const MAX_LOCAL_KEYS = 100_000;

/** A fixed window per key, in this process. */
class LocalWindowStore implements FastifyRateLimitStore {
  readonly #windows = new LRUCache<string, { current: number; endsAt: number }>({ max: MAX_LOCAL_KEYS });

  incr(key: string, done: Done, timeWindow: number): void {
    const now = Date.now();
    let window = this.#windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      window = { current: 0, endsAt: now + timeWindow };
      this.#windows.set(key, window);
    }
    window.current += 1;
    done(null, { current: window.current, ttl: window.endsAt - now });
  }

  child(): FastifyRateLimitStore {
    return this;
  }
}

/** Redis keys of the windows; the window's key ({@link rateLimitKey}) follows. */
const REDIS_PREFIX = 'berth:rate-limit:';

/** Counts and expires a window in one round trip; a key without expiry (a failed PEXPIRE) is given one. */
const INCREMENT_SCRIPT = `
local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if current == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`;

/** After Redis fails, this long is counted in the process before Redis is tried again. */
const REDIS_RETRY_MS = 5_000;

/**
 * A fixed window per key in Redis, shared by every replica. When Redis fails (down, unreachable, slow past its
 * command timeout) the limit fails open to this process's own count, for REDIS_RETRY_MS at a time: requests go
 * on, each replica limits on its own, and the failure is logged once per episode.
 */
class RedisWindowStore implements FastifyRateLimitStore {
  #localUntil = 0;

  constructor(
    private readonly redis: Redis,
    private readonly local: LocalWindowStore,
    private readonly log: FastifyBaseLogger,
  ) {
    redis.defineCommand('berthRateLimit', { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
  }

  incr(key: string, done: Done, timeWindow: number): void {
    if (Date.now() < this.#localUntil) {
      this.local.incr(key, done, timeWindow);
      return;
    }
    const command = (this.redis as unknown as RateLimitCommand).berthRateLimit(`${REDIS_PREFIX}${key}`, timeWindow);
    command.then(
      ([current, ttl]) => done(null, { current, ttl }),
      (error: Error) => {
        if (Date.now() >= this.#localUntil) {
          this.log.warn(
            { err: error, retryInMs: REDIS_RETRY_MS },
            'rate limit: Redis failed; counting in this process until it answers again',
          );
        }
        this.#localUntil = Date.now() + REDIS_RETRY_MS;
        this.local.incr(key, done, timeWindow);
      },
    );
  }

  child(): FastifyRateLimitStore {
    return this;
  }
}

interface RateLimitCommand {
  berthRateLimit(key: string, windowMs: number): Promise<[number, number]>;
}

/** How long the app's start waits for Redis's first answer (an unreachable Redis fails at once). */
const REDIS_START_WAIT_MS = 2_000;

/** Resolves once the client is ready, has failed once, or `timeoutMs` has passed. */
async function firstConnection(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      redis.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
    redis.once('error', done);
  });
}

/** Time one Redis command may take before the request goes on without it. */
const REDIS_COMMAND_TIMEOUT_MS = 250;

/**
 * A client that never makes a request wait for Redis: no offline queue (a command while disconnected fails at
 * once), no retries of a command, a short command timeout; it reconnects in the background.
 */
function connectRedis(url: string, log: FastifyBaseLogger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5_000),
  });
  let failing = false;
  redis.on('error', (error: Error) => {
    if (!failing) log.warn({ err: error }, 'rate limit: Redis connection failed; reconnecting');
    failing = true;
  });
  redis.on('ready', () => {
    if (failing) log.info('rate limit: Redis connection ready again');
    failing = false;
  });
  return redis;
}
