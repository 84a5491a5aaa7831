import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * PGlite lets one process open a data directory. The server holds this lock
 * file while it runs; CLI commands read it to find the running server
 * instead of opening the directory a second time.
 */
export interface LockInfo {
  pid: number;
  url?: string;
}

const lockPath = (dataDir: string) => join(dataDir, 'berth.lock');
/** Directories this process holds: a second opener in the same process is refused too. */
const heldHere = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The live holder of the lock, if any; a stale lock (dead pid) is ignored. */
export function readLock(dataDir: string): LockInfo | null {
  try {
    const info = JSON.parse(readFileSync(lockPath(dataDir), 'utf8')) as LockInfo;
    if (typeof info.pid !== 'number') return null;
    if (info.pid === process.pid) return heldHere.has(dataDir) ? info : null;
    return alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

export class DataDirLocked extends Error {
  override name = 'DataDirLocked';
  constructor(
    readonly dataDir: string,
    readonly holder: LockInfo,
  ) {
    super(
      `the data directory ${dataDir} is in use by Berth process ${holder.pid}${holder.url ? ` serving ${holder.url}` : ''}`,
    );
  }
}

export interface DataDirLock {
  update(info: Partial<LockInfo>): void;
  release(): void;
}

export function acquireLock(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = lockPath(dataDir);
  const holder = readLock(dataDir);
  if (holder !== null) throw new DataDirLocked(dataDir, holder);
  rmSync(path, { force: true });
  let fd: number;
  try {
    fd = openSync(path, 'wx');
  } catch {
    const racer = readLock(dataDir);
    throw new DataDirLocked(dataDir, racer ?? { pid: -1 });
  }
  heldHere.add(dataDir);
  let info: LockInfo = { pid: process.pid };
  writeSync(fd, JSON.stringify(info));
  closeSync(fd);
  let released = false;
  return {
    update(more) {
      info = { ...info, ...more };
      const f = openSync(path, 'w');
      writeSync(f, JSON.stringify(info));
      closeSync(f);
    },
    release() {
      if (released) return;
      released = true;
      heldHere.delete(dataDir);
      rmSync(path, { force: true });
    },
  };
}
