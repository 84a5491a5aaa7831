import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { buildApp } from './http/app.js';
import { loggerOptions } from './http/log-serializers.js';
import { openConfiguredStore, type OpenedStore } from './runtime.js';
import { createServices, type Services } from './services/index.js';
import { loadSignInSettings, type SignInSettings } from './sign-in-config.js';

export interface ServeOptions {
  memory?: boolean;
  /** Runs after migrations, before listening (e.g. loading the demo fixture). */
  prepare?: (opened: OpenedStore) => Promise<void>;
  installSignalHandlers?: boolean;
  /** How people sign in; default: what SIGN_IN_CONFIG says (read before the database opens). */
  signIn?: SignInSettings;
}

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  services: Services;
  /** Graceful and idempotent: stop accepting, end streams, finish in-flight requests, close the database. */
  shutdown(reason?: string): Promise<void>;
}

export async function startServer(config: Config, options: ServeOptions = {}): Promise<RunningServer> {
  let app: FastifyInstance | undefined;
  const signIn = options.signIn ?? loadSignInSettings(config);
  const opened = await openConfiguredStore(config, {
    memory: options.memory,
    // An idle PostgreSQL connection that fails is replaced by the pool; log it (on stderr until the app's logger exists).
    onPoolError: (error) => {
      if (app) app.log.error({ err: error }, 'idle database connection failed');
      else process.stderr.write(`berth: idle database connection failed: ${error.message}\n`);
    },
    onDatabaseEvent: (message, error) => {
      if (app) {
        if (error === undefined) app.log.warn(message);
        else app.log.error({ err: error }, message);
      } else process.stderr.write(`berth: ${message}${error instanceof Error ? `: ${error.message}` : ''}\n`);
    },
  });
  let accepting = true;
  let services: Services | undefined;
  try {
    await options.prepare?.(opened);
    services = createServices(opened.store, config, { signIn });
    // The cursor secret, generated into the database by the first replica to start when CURSOR_SECRET is unset.
    await services.cursorSecret.get();
    // The filter pool's threads start now, beside the rest of the start, rather than with the first request that
    // filters in process.
    const warming = services.filters;
    warming.warm().catch((error: unknown) => app?.log.warn({ err: error }, 'filter threads did not start'));
    app = await buildApp({
      config,
      services,
      isAcceptingTraffic: () => accepting,
      logger: loggerOptions(config.LOG_LEVEL),
    });
    const url = await app.listen({ port: config.PORT, host: config.HOST });
    // PUBLIC_URL unset: people reach Berth at the address it listens on (the port it got, when PORT is 0).
    const port = new URL(url).port;
    const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
    services.signIn.useListeningAddress(`http://${host}:${port}`);
    opened.lock?.update({ url });
    const readyApp = app;
    const readyServices = services;
    // Without the change feed every authenticated request reads the database again: slower, never stale.
    readyServices.caches.watch((active, error) => {
      if (active) readyApp.log.info('caches in use again: listening for database changes');
      else readyApp.log.warn({ err: error }, 'caches bypassed: not listening for database changes');
    });

    let shuttingDown: Promise<void> | undefined;
    const shutdown = (reason = 'shutdown') => {
      shuttingDown ??= (async () => {
        accepting = false;
        readyApp.log.info({ reason }, 'shutting down');
        const timer = setTimeout(() => {
          readyApp.log.error('shutdown timed out; exiting');
          process.exit(1);
        }, config.SHUTDOWN_TIMEOUT_MS);
        timer.unref();
        try {
          await readyServices.close();
          await readyApp.close();
        } finally {
          await opened.close();
          clearTimeout(timer);
        }
      })();
      return shuttingDown;
    };

    if (config.BERTH_FAULT_INJECTION && options.installSignalHandlers) {
      const supervisor = opened.store.supervisor;
      process.on('SIGUSR2', () => {
        // Logged once the worker running the embedded database has armed it.
        (supervisor === undefined
          ? Promise.reject(new Error('not on PGlite'))
          : supervisor.injectWalWriteFailure()
        ).then(
          () => readyApp.log.warn('fault injection: the next WAL write fails'),
          (error: unknown) => readyApp.log.warn({ err: error }, 'fault injection: nothing to inject into'),
        );
      });
    }

    if (options.installSignalHandlers) {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => {
          shutdown(signal).then(
            () => process.exit(0),
            (error: unknown) => {
              readyApp.log.error({ err: error }, 'shutdown failed');
              process.exit(1);
            },
          );
        });
      }
    }
    return { app: readyApp, url, services: readyServices, shutdown };
  } catch (error) {
    await services?.close().catch(() => undefined);
    await app?.close().catch(() => undefined);
    await opened.close();
    throw error;
  }
}
