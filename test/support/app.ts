import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { buildApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services/index.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, pgliteTarget, type TestDatabase } from './database.js';
import { baseWorld } from './world.js';
import { httpRequest, type RequestOptions, type TestResponse } from './http-request.js';

export type { RequestOptions, TestResponse } from './http-request.js';

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  services: Services;
  config: Config;
  url: string;
  database: TestDatabase;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  fixture?: Record<string, unknown>;
  config?: Partial<Config>;
  /** Replace parts of the services (e.g. providers pointed at fake servers). */
  services?: (store: Store, config: Config) => Services;
  /** PGlite in memory whatever TEST_DATABASE_URL says (a test that compares the two databases). */
  pglite?: boolean;
}

/** A real app on a fresh database, listening on a random port; requests go over HTTP. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database: TestDatabase = options.pglite
    ? { target: pgliteTarget(), drop: async () => undefined }
    : await createTestDatabase();
  const store = await openStore(database.target);
  await migrate(store);
  await loadFixture(store.db, options.fixture ?? baseWorld());
  const config = loadConfig({}, { LOG_LEVEL: 'silent', ...options.config });
  const services = (options.services ?? createServices)(store, config);
  const app = await buildApp({ config, services });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });

  const request = <T>(method: string, path: string, opts: RequestOptions = {}) =>
    httpRequest<T>(url, method, path, opts);

  return {
    app,
    store,
    services,
    config,
    url,
    database,
    request,
    close: async () => {
      await services.close();
      await app.close();
      await store.close();
      await database.drop();
    },
  };
}
