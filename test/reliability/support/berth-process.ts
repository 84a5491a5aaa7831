import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, onPostgres, type TestDatabase } from '../../support/database.js';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { ROOT, runCli, type ServerProcess } from '../../support/process.js';
import { httpRequest, type RequestOptions, type TestResponse } from '../../support/http-request.js';

/**
 * Berth as its users run it: `berth seed` then `berth serve` in a child process, reached only over
 * HTTP. The reliability suite guards a restructure, so it never imports the app's internals.
 * `output()` keeps the last 256 KiB the process wrote.
 */
export type BerthProcess = ServerProcess;

const CLI = join(ROOT, 'src', 'cli', 'main.ts');
const KEEP_OUTPUT = 256 * 1024;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** `berth serve` from source on a free port; resolves once `/healthz` answers. */
export async function spawnBerth(env: Record<string, string>, timeoutMs = 60_000): Promise<BerthProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BERTH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BERTH_CPU_PROF}`] : []),
      '--import',
      'tsx',
      CLI,
      'serve',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  // BERTH_SERVER_LOG=file: everything the server writes is also appended there (for a failure to be read later).
  const logFile = process.env.BERTH_SERVER_LOG;
  const keep = (d: Buffer) => {
    if (logFile) appendFileSync(logFile, d);
    out += d.toString();
    if (out.length > KEEP_OUTPUT * 2) out = out.slice(-KEEP_OUTPUT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone) throw new Error(`berth serve exited with ${child.exitCode ?? child.signalCode}:\n${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`berth serve did not answer /healthz within ${timeoutMs} ms:\n${out}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    output: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface Berth {
  url: string;
  /** The running process (replaced by `restart`). */
  server: BerthProcess;
  /** PGlite data directory, or undefined on PostgreSQL. */
  dataDir?: string;
  /** PostgreSQL URL Berth was given (may be a proxy's), or undefined on PGlite. */
  databaseUrl?: string;
  env: Record<string, string>;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
  /** Starts the process again on the same database (after `stop` or a kill). */
  restart(env?: Record<string, string>): Promise<void>;
  /** SIGTERM (or another signal) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Stops the process and removes its database. */
  close(): Promise<void>;
}

export interface BerthOptions {
  fixture: Record<string, unknown>;
  /** Extra environment (config variables). */
  env?: Record<string, string>;
  /** Defaults to the suite's database: PostgreSQL when TEST_DATABASE_URL is set, else PGlite on disk. */
  database?: 'pglite' | 'postgres';
  /**
   * Rewrites the PostgreSQL URL Berth is given (e.g. to go through a TCP proxy); seeding uses the real one.
   */
  viaUrl?: (url: string) => string | Promise<string>;
  /** Statements run on the database after `berth seed`, before `berth serve`: rows a seed refuses to write. */
  sql?: SqlStatement[];
}

export interface SqlStatement {
  text: string;
  params?: unknown[];
}

/** Runs statements straight on Berth's database (PGlite on disk, or PostgreSQL) while no Berth process holds it. */
async function runStatements(statements: SqlStatement[], at: { dataDir?: string; url?: string }): Promise<void> {
  if (at.url !== undefined) {
    const client = new pg.Client({ connectionString: at.url });
    await client.connect();
    try {
      for (const s of statements) await client.query(s.text, s.params);
    } finally {
      await client.end();
    }
    return;
  }
  const lite = await PGlite.create(at.dataDir);
  try {
    for (const s of statements) await lite.query(s.text, s.params);
  } finally {
    await lite.close();
  }
}

export async function startBerth(options: BerthOptions): Promise<Berth> {
  const kind = options.database ?? (onPostgres ? 'postgres' : 'pglite');
  let database: TestDatabase | undefined;
  const env: Record<string, string> = { LOG_LEVEL: 'warn', ...options.env };
  let dataDir: string | undefined;
  let databaseUrl: string | undefined;
  const work = mkdtempSync(join(tmpdir(), 'berth-rel-'));
  if (kind === 'postgres') {
    if (!onPostgres) throw new Error('startBerth: PostgreSQL needs TEST_DATABASE_URL');
    database = await createTestDatabase();
    databaseUrl = database.url!;
    env.DATABASE_URL = databaseUrl;
  } else {
    dataDir = join(work, 'data');
    env.BERTH_DATA_DIR = dataDir;
  }
  const fixtureFile = join(work, 'fixture.json');
  writeFileSync(fixtureFile, JSON.stringify(options.fixture));
  const seeded = await runCli(['seed', fixtureFile], { ...env, LOG_LEVEL: 'silent' });
  if (seeded.code !== 0) throw new Error(`berth seed failed (${seeded.code}):\n${seeded.stderr}`);
  if (options.sql !== undefined) await runStatements(options.sql, { dataDir, url: databaseUrl });
  if (databaseUrl !== undefined && options.viaUrl) {
    databaseUrl = await options.viaUrl(databaseUrl);
    env.DATABASE_URL = databaseUrl;
  }

  const berth: Berth = {
    url: '',
    server: undefined as unknown as BerthProcess,
    dataDir,
    databaseUrl,
    env,
    request: <T>(method: string, path: string, opts: RequestOptions = {}) =>
      httpRequest<T>(berth.url, method, path, opts),
    async restart(extra = {}) {
      Object.assign(env, extra);
      berth.server = await spawnBerth(env);
      berth.url = berth.server.url;
    },
    stop: (signal) => berth.server.stop(signal),
    async close() {
      if (berth.server && berth.server.child.exitCode === null && berth.server.child.signalCode === null) {
        // BERTH_CPU_PROF: a clean exit, so Node writes the CPU profile.
        berth.server.child.kill(process.env.BERTH_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
        await berth.server.exited;
      }
      await database?.drop();
      rmSync(work, { recursive: true, force: true });
    },
  };
  await berth.restart();
  return berth;
}
