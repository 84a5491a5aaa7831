import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { buildApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services/index.js';
import { openStore, type Store } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { baseWorld } from './world.js';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as is, without JSON encoding. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

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
}

/** A real app on a fresh database, listening on a random port; requests go over HTTP. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const store = await openStore(database.target);
  await migrate(store);
  await loadFixture(store.db, options.fixture ?? baseWorld());
  const config = loadConfig({}, { LOG_LEVEL: 'silent', ...options.config });
  const services = (options.services ?? createServices)(store, config);
  const app = await buildApp({ config, store, services });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });

  async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Buffer | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${url}${path}`, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

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
