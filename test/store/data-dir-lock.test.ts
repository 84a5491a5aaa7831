import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLock, DataDirLocked, readLock } from '../../src/store/data-dir-lock.js';

const LOCK_SOURCE = fileURLToPath(new URL('../../src/store/data-dir-lock.ts', import.meta.url));

/**
 * A separate process that tries to take the lock. Fault injection, in the child
 * only: BERTH_TEST_PAUSE_MS sleeps after every read of a `berth.lock*` file, so
 * every contender sees the stale lock before any of them acts on it (the race
 * window of a read-then-replace takeover, made wide), or for a random part of
 * it with BERTH_TEST_PAUSE_RANDOM (other interleavings); BERTH_TEST_DIE_BEFORE_TAKEOVER
 * kills the process just before it would move a file onto `berth.lock`, as a
 * crash in the middle of a takeover would.
 */
const CONTENDER = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { pathToFileURL } from 'node:url';

const [modulePath, dataDir, goFile] = process.argv.slice(2);
const pauseMs = Number(process.env.BERTH_TEST_PAUSE_MS ?? '0');
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const isLockFile = (p) => typeof p === 'string' && p.includes('berth.lock');
if (pauseMs > 0) {
  const readFileSync = fs.readFileSync;
  fs.readFileSync = function (...args) {
    const out = readFileSync.apply(this, args);
    if (isLockFile(args[0])) sleep(process.env.BERTH_TEST_PAUSE_RANDOM === '1' ? Math.random() * pauseMs : pauseMs);
    return out;
  };
}
if (process.env.BERTH_TEST_DIE_BEFORE_TAKEOVER === '1') {
  const renameSync = fs.renameSync;
  fs.renameSync = function (from, to) {
    if (isLockFile(from) && String(to).endsWith('berth.lock')) process.kill(process.pid, 'SIGKILL');
    return renameSync.call(this, from, to);
  };
}
syncBuiltinESMExports();

const { acquireLock, DataDirLocked } = await import(pathToFileURL(modulePath).href);
process.stdout.write('ready\\n');
while (!fs.existsSync(goFile)) sleep(1);
let result;
try {
  const lock = acquireLock(dataDir);
  lock.update({ url: 'http://127.0.0.1:' + process.pid });
  result = 'won';
} catch (error) {
  result = error instanceof DataDirLocked ? 'refused ' + error.holder.pid : 'error ' + error.message;
}
process.stdout.write(result + '\\n');
// Hold (or keep trying to hold) until the test has every result: a winner that
// exited early would leave a stale lock another contender could rightly take.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

interface Contender {
  child: ChildProcess;
  ready: Promise<void>;
  result: Promise<string>;
  exited: Promise<void>;
}

let workDir: string;
let script: string;
let lockModule: string;
let deadPid: number;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'berth-lock-'));
  script = join(workDir, 'contender.mjs');
  writeFileSync(script, CONTENDER);
  // Contenders run the module as plain JavaScript: dozens of processes start in
  // milliseconds each instead of going through a TypeScript loader.
  const source = readFileSync(LOCK_SOURCE, 'utf8');
  expect(source, 'the lock module imports only Node built-ins, so it runs alone').not.toMatch(/from '(?!node:)/);
  lockModule = join(workDir, 'data-dir-lock.mjs');
  writeFileSync(
    lockModule,
    ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } })
      .outputText,
  );
  // A pid that certainly belonged to a process and is now dead.
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  deadPid = child.pid!;
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

let dirCount = 0;
function dataDir(): string {
  const dir = join(workDir, `data-${++dirCount}`);
  mkdirSync(dir);
  return dir;
}

function startContender(dir: string, goFile: string, env: Record<string, string>): Contender {
  const child = spawn(process.execPath, [script, lockModule, dir, goFile], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin!.on('error', () => undefined); // a contender killed mid-takeover has no stdin to close
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const nextLine = async (what: string) => {
    const line = await lines.next();
    if (line.done) throw new Error(`contender ${child.pid} exited before ${what}: ${stderr}`);
    return line.value;
  };
  const ready = nextLine('ready').then((line) => expect(line).toBe('ready'));
  const result = ready.then(() => nextLine('its result'));
  return { child, ready, result, exited };
}

/** Starts `count` contenders, lets them go at once, and returns what each got, by pid. */
async function race(dir: string, count: number, env: Record<string, string>): Promise<Map<number, string>> {
  const goFile = join(dir, '..', `go-${dirCount}`);
  const contenders = Array.from({ length: count }, () => startContender(dir, goFile, env));
  try {
    await Promise.all(contenders.map((c) => c.ready));
    writeFileSync(goFile, '');
    const results = await Promise.all(contenders.map((c) => c.result));
    return new Map(contenders.map((c, i) => [c.child.pid!, results[i]!]));
  } finally {
    for (const c of contenders) c.child.stdin!.end();
    await Promise.all(contenders.map((c) => c.exited));
  }
}

function writeStaleLock(dir: string): void {
  writeFileSync(join(dir, 'berth.lock'), JSON.stringify({ pid: deadPid, url: 'http://127.0.0.1:1' }));
}

describe('acquireLock: taking over a stale lock', { timeout: 120_000 }, () => {
  const ROUNDS = 3;
  const CONTENDERS = 6;

  it.each([
    ['all contenders read the stale lock before any acts on it', { BERTH_TEST_PAUSE_MS: '40' }],
    ['random pauses after each read', { BERTH_TEST_PAUSE_MS: '20', BERTH_TEST_PAUSE_RANDOM: '1' }],
    ['without injected pauses', {}],
  ])('lets exactly one of many processes win, round after round (%s)', async (_, env) => {
    for (let round = 0; round < ROUNDS; round++) {
      const dir = dataDir();
      writeStaleLock(dir);
      const results = await race(dir, CONTENDERS, env);
      const winners = [...results].filter(([, r]) => r === 'won').map(([pid]) => pid);
      expect(winners, `round ${round}: ${JSON.stringify([...results])}`).toHaveLength(1);
      const winner = winners[0]!;
      for (const [pid, result] of results) if (pid !== winner) expect(result).toBe(`refused ${winner}`);
      // The lock names the winner, and the takeover left nothing else behind.
      expect(JSON.parse(readFileSync(join(dir, 'berth.lock'), 'utf8'))).toMatchObject({
        pid: winner,
        url: `http://127.0.0.1:${winner}`,
      });
      expect(readdirSync(dir)).toEqual(['berth.lock']);
    }
  });

  it('is not blocked by contenders that died in the middle of a takeover', async () => {
    const dir = dataDir();
    writeStaleLock(dir);
    for (let crash = 0; crash < 2; crash++) {
      const results = await race(dir, 1, { BERTH_TEST_DIE_BEFORE_TAKEOVER: '1' }).catch((error: Error) => error);
      expect(results).toBeInstanceOf(Error);
      expect(JSON.parse(readFileSync(join(dir, 'berth.lock'), 'utf8'))).toMatchObject({ pid: deadPid });
    }
    const lock = acquireLock(dir);
    try {
      expect(readLock(dir)).toEqual({ pid: process.pid });
      expect(readdirSync(dir)).toEqual(['berth.lock']);
    } finally {
      lock.release();
    }
  });

  it('takes over a lock of a dead process at once, and one of unreadable content', () => {
    const dir = dataDir();
    writeStaleLock(dir);
    expect(readLock(dir)).toBeNull();
    acquireLock(dir).release();

    writeFileSync(join(dir, 'berth.lock'), '');
    acquireLock(dir).release();
    expect(existsSync(join(dir, 'berth.lock'))).toBe(false);
  });
});

describe('acquireLock: a live holder', { timeout: 60_000 }, () => {
  it('refuses while another process holds the lock, naming its pid and URL', async () => {
    const dir = dataDir();
    const goFile = join(workDir, `go-live-${dirCount}`);
    writeFileSync(goFile, '');
    const holder = startContender(dir, goFile, {});
    try {
      expect(await holder.result).toBe('won');
      const expected = { pid: holder.child.pid, url: `http://127.0.0.1:${holder.child.pid}` };
      expect(readLock(dir)).toEqual(expected);
      let thrown: unknown;
      try {
        acquireLock(dir);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(DataDirLocked);
      expect((thrown as DataDirLocked).holder).toEqual(expected);
      expect((thrown as DataDirLocked).message).toContain(`process ${holder.child.pid} serving ${expected.url}`);
    } finally {
      holder.child.stdin!.end();
      await holder.exited;
    }
    // Its process is gone without releasing: the lock is stale and taken over.
    expect(readLock(dir)).toBeNull();
    acquireLock(dir).release();
  });

  it('refuses a second opener in the same process', () => {
    const dir = dataDir();
    const lock = acquireLock(dir);
    try {
      expect(() => acquireLock(dir)).toThrow(DataDirLocked);
      expect(readLock(dir)).toEqual({ pid: process.pid });
    } finally {
      lock.release();
    }
  });
});

describe('DataDirLock', () => {
  it('is released, then taken again', () => {
    const dir = dataDir();
    const first = acquireLock(dir);
    first.update({ url: 'http://127.0.0.1:8080' });
    expect(readLock(dir)).toEqual({ pid: process.pid, url: 'http://127.0.0.1:8080' });
    first.release();
    first.release();
    expect(readLock(dir)).toBeNull();
    expect(readdirSync(dir)).toEqual([]);

    const second = acquireLock(dir);
    expect(readLock(dir)).toEqual({ pid: process.pid });
    // The first handle no longer owns the file: its release must not drop the second's lock.
    first.release();
    expect(readLock(dir)).toEqual({ pid: process.pid });
    second.release();
    expect(readdirSync(dir)).toEqual([]);
  });
});
