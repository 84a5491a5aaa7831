import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import secureJson from 'secure-json-parse';
import type { Config } from '../config.js';
import { compileTrustProxy } from '../core/client-address.js';
import { appError } from '../core/errors.js';
import type { Services } from '../services/index.js';
import { authHook, settleWritesHook } from './plugins/auth.js';
import { lingeringClose } from './plugins/lingering-close.js';
import { AccessLog } from './log-serializers.js';
import { RequestLogger } from './request-logger.js';
import {
  answerClientError,
  answerFrameworkError,
  installErrorHandling,
  MAX_PARAM_LENGTH,
  newRequestId,
  SECURITY_HEADERS,
} from './plugins/error-handler.js';
import { installMetrics } from './plugins/metrics.js';
import { FailedAuthGuard } from './plugins/failed-auth.js';
import { installPressure } from './plugins/pressure.js';
import { installRateLimit, ThrottleStats } from './plugins/rate-limit.js';
import { ConnectionLimits } from './plugins/connections.js';
import { slowClientServerOptions } from './plugins/slow-clients.js';
import { installTenantContext } from './plugins/tenant.js';
import { ErrorSchema } from '../core/schemas/common.js';
import { validatorCompiler } from './validation.js';
import { healthRoutes } from './routes/health.js';
import { logIngestRoutes } from './routes/log-ingest.js';
import { logQueryRoutes } from './routes/log-query.js';
import { logHistogramRoutes } from './routes/log-histogram.js';
import { logStreamRoutes } from './routes/log-stream.js';
import { moduleCategoryRoutes } from './routes/module-categories.js';
import { certificateRoutes } from './routes/certificates.js';
import { domainRoutes } from './routes/domains.js';
import { organizationRoutes } from './routes/organizations.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { catalogRoutes } from './routes/catalog.js';
import { uiRoutes } from './routes/ui.js';
import { signInRoutes } from './routes/sign-in.js';
import { identityRoutes } from './routes/identities.js';

export interface AppDeps {
  config: Config;
  services: Services;
  logger?: FastifyServerOptions['logger'];
  /** Answers false once shutdown has begun, so /readyz drains the replica. */
  isAcceptingTraffic?: () => boolean;
}

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Where `npm run build` leaves the log explorer: dist/ui beside this package's code, unless UI_DIR says otherwise. */
function uiDirOf(config: Config): string {
  return config.UI_DIR !== '' ? config.UI_DIR : fileURLToPath(new URL('../../dist/ui', import.meta.url));
}

/** Builds the HTTP app from its dependencies; never listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, services } = deps;
  // One trust function for request.ip and for the connection limits, so both see the same client address.
  const trustProxy = compileTrustProxy(config.TRUST_PROXY);
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.BODY_LIMIT_BYTES,
    logController: new AccessLog(),
    // Each request's logger is made on first use (request-logger.ts).
    childLoggerFactory: RequestLogger.factory,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && INCOMING_REQUEST_ID.test(incoming) ? incoming : newRequestId();
    },
    return503OnClosing: false,
    // Long ids reach schema validation (400 naming the field) instead of the router's bare 414.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Router-level faults (a malformed %-escape, an overlong parameter) answer the error object too.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    ajv: { customOptions: { removeAdditional: false } },
    // Node would answer a Host-less HTTP/1.1 request itself, with an empty 400: the check is in the hook below.
    http: { requireHostHeader: false, ...slowClientServerOptions(config) },
    // Fastify would otherwise set Node's request timeout to 0 (none) after creating the server.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // request.ip: the socket's address, or behind TRUST_PROXY the nearest untrusted hop of X-Forwarded-For.
    trustProxy: trustProxy ?? false,
  }).withTypeProvider<TypeBoxTypeProvider>();
  const connections = new ConnectionLimits(config, trustProxy, app.log);
  connections.attach(app.server);
  app.decorate('connections', connections);
  // Node answers an Expect other than 100-continue itself, with an empty 417: ignore it instead (RFC 9110 §10.1.1 allows both).
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  // Node closes a connection as soon as a `Connection: close` answer is written, even while the client is still
  // sending a body nobody read (an early 401 or 413): the kernel then resets the connection and the client loses
  // the answer. Close lingering instead: end our side, keep reading (Node discards the rest), close after a moment.
  app.server.on('connection', (socket: Socket) => {
    socket.destroySoon = lingeringClose;
  });

  app.decorateRequest('caller', null);
  // Every route registered: read by the 405's Allow header and by the test that the OpenAPI document covers them all.
  const routes: { method: string; url: string }[] = [];
  app.decorate('berthRoutes', routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  app.setValidatorCompiler(validatorCompiler);
  installTenantContext(app);
  // Callback hooks, not async ones: an async hook costs every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.headers(SECURITY_HEADERS);
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(appError('http:request:malformed', { description: 'An HTTP/1.1 request must have a Host header.' }));
      return;
    }
    done();
  });

  // Only JSON bodies; an empty body is no body (bodyless POSTs from curl -H content-type).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' }));
    } catch (error) {
      done(appError('validation:request:malformed-json', { description: (error as Error).message }), undefined);
    }
  });

  installErrorHandling(app, routes);
  // Requests refused by the guards below, for the metrics (berth_rate_limited_total).
  const throttled = new ThrottleStats();
  app.decorate('throttled', throttled);
  const isUnderPressure = await installPressure(app, { config, stats: throttled });
  app.addSchema(ErrorSchema);
  // request.cookies and reply.setCookie, for the session (plugins/session-cookie.ts).
  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Berth API',
        version: '0.0.0',
        description: 'Control-plane API of an infrastructure deployment platform on AWS.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'berth_<keyId>_<secret>' },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'berth_session',
            description:
              'The session cookie a sign-in sets (`__Host-berth_session` over HTTPS); writes must come from ' +
              "Berth's own origin",
          },
        },
      },
      security: [{ bearer: [] }, { session: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string | undefined) ?? `def-${i}` },
  });
  installMetrics(
    app,
    services.streams,
    services.heavy,
    throttled,
    connections,
    { metricsToken: config.METRICS_TOKEN },
    services.filters,
  );

  await app.register(healthRoutes, {
    health: services.health,
    isAcceptingTraffic: deps.isAcceptingTraffic ?? (() => true),
    isUnderPressure,
  });

  await app.register(uiRoutes, { dir: uiDirOf(config) });
  await app.register(signInRoutes, { signIn: services.signIn });

  await app.register(async (api) => {
    api.addHook(
      'onRequest',
      authHook(services.authentication, {
        failedAuth: FailedAuthGuard.from(config),
        stats: throttled,
        signIn: services.signIn,
      }),
    );
    await installRateLimit(api, { config, stats: throttled });
    api.addHook('onSend', settleWritesHook(services.caches));
    await api.register(organizationRoutes, { organizations: services.organizations });
    await api.register(apiKeyRoutes, { apiKeys: services.apiKeys });
    await api.register(catalogRoutes, { identity: services.identity, catalog: services.catalog });
    await api.register(identityRoutes, { links: services.identityLinks });
    await api.register(moduleCategoryRoutes, { categories: services.categories });
    await api.register(logIngestRoutes, { ingest: services.ingest });
    await api.register(domainRoutes, { domains: services.domains, nameAvailability: services.nameAvailability });
    await api.register(certificateRoutes, { certificates: services.certificates });
    await api.register(logQueryRoutes, { logs: services.logs });
    await api.register(logHistogramRoutes, { logs: services.logs });
    await api.register(logStreamRoutes, { streams: services.streams });
  });

  return app;
}
