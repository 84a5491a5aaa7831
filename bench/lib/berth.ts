import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { storeTarget } from '../../src/runtime.js';
import type { StoreTarget } from '../../src/store/db.js';
import { ADMIN_URL, freshDatabase, postgresReachable } from './postgres.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'src', 'cli', 'main.ts');

export type DatabaseKind = 'pglite' | 'postgres';

/** One benchmark's own database: a PGlite directory under a temp dir, or a fresh PostgreSQL database. */
export interface BenchDatabase {
  kind: DatabaseKind;
  /** What points Berth at it: `DATABASE_URL` or `BERTH_DATA_DIR`. */
  env: Record<string, string>;
  /** What Berth itself opens for that environment (same driver, same pool and timeouts). */
  target: StoreTarget;
  /** PostgreSQL URL, when on PostgreSQL. */
  url?: string;
  /** Removes the directory or drops the database. */
  close(): Promise<void>;
}

function withTarget(kind: DatabaseKind, env: Record<string, string>, close: () => Promise<void>): BenchDatabase {
  const target = storeTarget(loadConfig(env));
  return { kind, env, target, url: env.DATABASE_URL, close };
}

/**
 * The databases to measure on: PGlite, and PostgreSQL when its server answers (else a note in
 * `skipped`, which the runner prints); `BENCH_DATABASES=postgres` (or `pglite`) measures on those only.
 */
export async function databaseKinds(skipped: string[]): Promise<DatabaseKind[]> {
  const only = process.env.BENCH_DATABASES?.split(',').map((k) => k.trim());
  if (only !== undefined) {
    const all = ['pglite', 'postgres'] as const;
    const kinds = all.filter((k) => only.includes(k));
    for (const k of all)
      if (!kinds.includes(k)) skipped.push(`${k} rows: not in BENCH_DATABASES (a partial run: keep results.json)`);
    if (kinds.includes('postgres') && !(await postgresReachable())) throw new Error('BENCH_DATABASES: no PostgreSQL');
    return kinds;
  }
  if (await postgresReachable()) return ['pglite', 'postgres'];
  if (ADMIN_URL === 'off') skipped.push('PostgreSQL rows: BENCH_DATABASE_URL=off');
  else {
    const where = new URL(ADMIN_URL);
    where.password = '';
    skipped.push(`PostgreSQL rows: no server answers at ${where.toString()}`);
  }
  return ['pglite'];
}

/** `berth_bench_<bench>` on PostgreSQL, or a new PGlite directory. */
export async function createDatabase(bench: string, kind: DatabaseKind): Promise<BenchDatabase> {
  if (kind === 'postgres') {
    const fresh = await freshDatabase(bench);
    return withTarget(kind, { DATABASE_URL: fresh.url }, fresh.drop);
  }
  const dir = mkdtempSync(join(tmpdir(), `berth-bench-${bench}-`));
  return withTarget(kind, { BERTH_DATA_DIR: join(dir, 'data') }, async () =>
    rmSync(dir, { recursive: true, force: true }),
  );
}

/**
 * A second PGlite directory with the same data, for an in-process baseline while Berth holds the
 * first (PGlite opens a directory in one process only). Nothing may have the source open.
 */
export function copyPglite(db: BenchDatabase, name: string): BenchDatabase {
  const source = db.env.BERTH_DATA_DIR;
  if (db.kind !== 'pglite' || source === undefined) throw new Error('copyPglite: not a PGlite database');
  const dir = mkdtempSync(join(tmpdir(), `berth-bench-${name}-`));
  const dataDir = join(dir, 'data');
  cpSync(source, dataDir, { recursive: true, filter: (path) => !path.endsWith('berth.lock') });
  return withTarget('pglite', { BERTH_DATA_DIR: dataDir }, async () => rmSync(dir, { recursive: true, force: true }));
}

/** The environment of a Berth child: the database's, never one inherited from the shell. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.BERTH_DATA_DIR;
  delete env.BENCH_RESULT_FILE;
  return { ...env, ...extra };
}

/** `berth <args>` from source, to completion; rejects with its stderr on a non-zero exit. */
export function runBerthCli(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      cwd: ROOT,
      env: childEnv({ LOG_LEVEL: 'silent', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`berth ${args.join(' ')} exited with ${code}:\n${err}`)),
    );
  });
}

/** `berth seed` with a fixture object, as a user loads one. */
export async function seedFixture(db: BenchDatabase, fixture: Record<string, unknown>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-fixture-'));
  try {
    const file = join(dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(fixture));
    await runBerthCli(['seed', file], db.env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

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

export interface BerthServer {
  url: string;
  pid: number;
  /** What the process wrote on stderr (its last 64 KiB). */
  errors(): string;
  /** SIGTERM, then SIGKILL after 15 s. */
  stop(): Promise<void>;
}

const KEEP = 64 * 1024;

/**
 * `berth serve` from source in its own process at `LOG_LEVEL=info` (unless `env` says otherwise),
 * on a free loopback port; resolves once `/healthz` answers. Its log goes to /dev/null: Berth pays
 * for serialising each line and the write, as in production, but no reader in this machine's two
 * cores competes with it or with the load.
 */
export async function startBerth(db: BenchDatabase, env: Record<string, string> = {}): Promise<BerthServer> {
  const port = await freePort();
  // BENCH_CPU_PROF=<dir>: every Berth process writes a CPU profile there when it stops.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', CLI, 'serve'], {
    cwd: ROOT,
    env: childEnv({ LOG_LEVEL: 'info', ...db.env, ...env, PORT: String(port), HOST: '127.0.0.1' }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    if (err.length > 2 * KEEP) err = err.slice(-KEEP);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (gone) throw new Error(`berth serve exited with ${child.exitCode ?? child.signalCode}:\n${err}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`berth serve did not answer /healthz within 120 s:\n${err}`);
    }
    try {
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid!,
    errors: () => err,
    stop: async () => {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
