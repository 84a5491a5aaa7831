import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure';
import type { Config } from '../../config.js';
import { appError, renderError } from '../../core/errors.js';
import { isIdentityProviderRoute, operationOf, retryAfterSeconds, type ThrottleStats } from './rate-limit.js';

/**
 * Never shed: liveness (a replica under load is alive: restarting it would make things worse), the metrics
 * (they tell why), readiness (it answers 503 itself, in its own words) and the identity-provider route (its
 * declared statuses exclude 503, docs/design.md#1-identity-providers; it is served from an in-process cache).
 */
const NEVER_SHED = new Set(['healthz', 'readyz', 'metrics']);

/** How often the event-loop delay is measured: its mean over this period is compared with the threshold. */
function sampleIntervalMs(maxDelayMs: number): number {
  return Math.min(1_000, Math.max(100, maxDelayMs));
}

/** Time a shed client is told to wait. */
const RETRY_AFTER_MS = 1_000;

/** While shedding, one warning per this period (with the count shed), not one per request. */
const LOG_EVERY_MS = 10_000;

/**
 * Load shedding on event-loop lag (`@fastify/under-pressure`): while the mean delay over a sample exceeds
 * PRESSURE_MAX_EVENT_LOOP_DELAY_MS, sample after sample, requests are answered 503 `internal:server:unavailable` with Retry-After in
 * a root `onRequest` hook, before authentication or any other work. Returns whether the process is under
 * pressure now, for /readyz (always false when the threshold is 0, off).
 */
export async function installPressure(
  app: FastifyInstance,
  { config, stats }: { config: Pick<Config, 'PRESSURE_MAX_EVENT_LOOP_DELAY_MS'>; stats: ThrottleStats },
): Promise<() => boolean> {
  const maxDelayMs = config.PRESSURE_MAX_EVENT_LOOP_DELAY_MS;
  if (maxDelayMs === 0) return () => false;
  let shed = 0;
  let lastLoggedAt = 0;
  const interval = sampleIntervalMs(maxDelayMs);
  // Starting up (compiling every route's schemas) stalls the loop, and the first samples would report it:
  // shedding starts two samples after the app is ready.
  let armed = false;
  // One stall (a garbage collection, one big synchronous task) makes one sample's mean exceed the threshold:
  // shedding needs the lag to last, seen high by polls spanning one and a half sample intervals (two samples).
  let pressureSince: number | undefined;
  const watch = setInterval(() => {
    if (!app.isUnderPressure()) pressureSince = undefined;
    else pressureSince ??= Date.now();
  }, interval / 2).unref();
  app.addHook('onReady', async () => {
    setTimeout(() => {
      armed = true;
    }, 2 * interval).unref();
  });
  app.addHook('onClose', async () => clearInterval(watch));
  const sustained = () => armed && pressureSince !== undefined && Date.now() - pressureSince >= 1.5 * interval;
  const shedRequest = (request: FastifyRequest, reply: FastifyReply, _type: string, value?: number) => {
    if (!sustained() || NEVER_SHED.has(operationOf(request) ?? '') || isIdentityProviderRoute(request))
      return undefined;
    stats.count('pressure');
    shed += 1;
    const now = Date.now();
    if (now - lastLoggedAt >= LOG_EVERY_MS) {
      request.log.warn({ eventLoopDelayMs: value, maxDelayMs, shed }, 'under pressure: shedding requests with 503');
      lastLoggedAt = now;
      shed = 0;
    }
    // Answered here rather than thrown: the error handler would log every shed request as a failure.
    const error = overloaded();
    reply
      .code(error.status)
      .headers(error.headers ?? {})
      .type('application/json; charset=utf-8');
    return renderError(error, request.id, false);
  };
  await app.register(underPressure, {
    maxEventLoopDelay: maxDelayMs,
    sampleInterval: interval,
    // The plugin sends what the handler returns (its README: "any other return value than a promise or nullish
    // will be sent"); its types only allow void.
    pressureHandler: shedRequest as unknown as FastifyUnderPressureOptions['pressureHandler'],
  });
  return () => sustained() && app.isUnderPressure();
}

/** The 503 of a replica under pressure (/readyz answers it too). */
export function overloaded() {
  return appError('internal:server:unavailable', {
    description: 'The server is overloaded. Retry shortly.',
    headers: { 'retry-after': retryAfterSeconds(RETRY_AFTER_MS) },
    internal: false,
  });
}
