import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * PGlite lets one process open a data directory. The server holds this lock
 * file while it runs; CLI commands read it to find the running server
 * instead of opening the directory a second time.
 *
 * Every change to `berth.lock` is atomic, so a reader sees a whole lock or
 * none: it is created by hard-linking a complete temporary file (`link` fails
 * if the name exists), rewritten by renaming one onto it, and removed only by
 * its holder.
 *
 * A lock whose process is dead is stale and taken over at once, but taking
 * over must not race: if two processes read the same stale lock and each
 * replaced it, both would think they hold it. So a stale lock is replaced
 * only by the one process that creates (exclusively, by `link`) its successor
 * file `berth.lock.next.<digest of the stale lock's content>`, and only after
 * re-reading the lock and finding the same content. The name is unique to
 * that content (each lock carries a random id), so no two processes can hold
 * the right to replace the same lock, and the rename moves the successor away
 * in the same step that changes the lock: a latecomer who creates the name
 * again finds a different lock and backs off. If the creator of a successor
 * file dies before renaming it, that file is stale in turn and is succeeded
 * the same way (`berth.lock.next.<digest of its content>`), so a crash in the
 * middle of a takeover never blocks the directory. Nothing is ever deleted
 * on the strength of an earlier read, which is what made remove-then-create
 * racy.
 */
export interface LockInfo {
  pid: number;
  url?: string;
}

/** What is written in a lock file: the holder, and an id unique to this holding. */
interface LockRecord extends LockInfo {
  id: string;
}

/** A lock or successor file as read: its exact content, and the record if it parses. */
interface Entry {
  raw: string;
  record: LockRecord | null;
}

const LOCK_NAME = 'berth.lock';
const SUCCESSOR_PREFIX = `${LOCK_NAME}.next.`;
const TEMP_SUFFIX = '.tmp';
/** How long to wait for another process in the middle of a takeover (it needs microseconds). */
const TAKEOVER_WAIT_MS = 5_000;
const TAKEOVER_POLL_MS = 5;
/** Successor files of dead processes chained after one stale lock; each needs a crash mid-takeover. */
const MAX_SUCCESSION = 64;

const lockPath = (dataDir: string) => join(dataDir, LOCK_NAME);
/** Directories this process holds, with the id of each holding: a second opener in the same process is refused too. */
const heldHere = new Map<string, string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseRecord(raw: string): LockRecord | null {
  try {
    const value = JSON.parse(raw) as Partial<LockRecord> | null;
    if (typeof value?.pid !== 'number' || !Number.isInteger(value.pid) || value.pid <= 0) return null;
    return {
      pid: value.pid,
      id: typeof value.id === 'string' ? value.id : '',
      ...(typeof value.url === 'string' ? { url: value.url } : {}),
    };
  } catch {
    return null;
  }
}

function readEntry(path: string): Entry | null {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  return { raw, record: parseRecord(raw) };
}

function infoOf(record: LockInfo): LockInfo {
  return record.url === undefined ? { pid: record.pid } : { pid: record.pid, url: record.url };
}

/** Whether `entry` (the lock of `dataDir`) is held: by a live process, or by this one through a holding it has not released. */
function isHeld(dataDir: string, entry: Entry): entry is { raw: string; record: LockRecord } {
  const record = entry.record;
  if (record === null) return false;
  if (record.pid === process.pid) return heldHere.get(dataDir) === record.id;
  return alive(record.pid);
}

/** A successor file is live while its creator runs; this process is never in the middle of a takeover when it looks. */
function isLiveSuccessor(entry: Entry): entry is { raw: string; record: LockRecord } {
  return entry.record !== null && entry.record.pid !== process.pid && alive(entry.record.pid);
}

function tempPath(dataDir: string): string {
  return join(dataDir, `${LOCK_NAME}.${process.pid}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
}

/** Creates `path` holding `content` in one step, or returns false when the name exists. */
function createExclusive(dataDir: string, path: string, content: string): boolean {
  const temp = tempPath(dataDir);
  writeFileSync(temp, content, { flag: 'wx' });
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temp, { force: true });
  }
}

/** Replaces `path` with a file holding `content` in one step. */
function replaceAtomically(dataDir: string, path: string, content: string): void {
  const temp = tempPath(dataDir);
  writeFileSync(temp, content, { flag: 'wx' });
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

function successorPath(dataDir: string, of: Entry): string {
  return join(dataDir, SUCCESSOR_PREFIX + createHash('sha256').update(of.raw).digest('hex').slice(0, 32));
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

type TakeoverOutcome = 'won' | 'retry' | { busy: LockInfo };

/** One attempt to replace the stale lock `stale` by `content`; see the module comment. */
function takeOver(dataDir: string, stale: Entry, content: string): TakeoverOutcome {
  let predecessor = stale;
  for (let depth = 0; depth < MAX_SUCCESSION; depth++) {
    const successor = successorPath(dataDir, predecessor);
    if (createExclusive(dataDir, successor, content)) {
      // Only the creator of this name may replace `stale`, and nothing else
      // changes a stale lock, so if the lock is still `stale` now it stays so
      // until the rename.
      if (readEntry(lockPath(dataDir))?.raw === stale.raw) {
        renameSync(successor, lockPath(dataDir));
        return 'won';
      }
      rmSync(successor, { force: true });
      return 'retry';
    }
    const holder = readEntry(successor);
    if (holder === null) return 'retry';
    if (isLiveSuccessor(holder)) return { busy: infoOf(holder.record) };
    predecessor = holder;
  }
  throw new Error(
    `could not take over the stale lock of ${dataDir}: too many abandoned ${SUCCESSOR_PREFIX}* files; remove them and ${LOCK_NAME}`,
  );
}

/** Successor files are meaningful only while the lock they would replace is stale; temporary files only while their writer runs. */
function removeLeftovers(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (!name.startsWith(`${LOCK_NAME}.`)) continue;
    if (name.startsWith(SUCCESSOR_PREFIX)) {
      rmSync(join(dataDir, name), { force: true });
    } else if (name.endsWith(TEMP_SUFFIX)) {
      const pid = Number(name.slice(LOCK_NAME.length + 1).split('.')[0]);
      if (Number.isInteger(pid) && pid !== process.pid && !alive(pid)) rmSync(join(dataDir, name), { force: true });
    }
  }
}

/** The live holder of the lock, if any; a stale lock (dead pid) is ignored. */
export function readLock(dataDir: string): LockInfo | null {
  try {
    const entry = readEntry(lockPath(dataDir));
    return entry !== null && isHeld(dataDir, entry) ? infoOf(entry.record) : null;
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
  let record: LockRecord = { pid: process.pid, id: randomBytes(16).toString('hex') };
  const content = () => JSON.stringify(record);
  const deadline = Date.now() + TAKEOVER_WAIT_MS;
  let waitingFor: LockInfo = { pid: -1 };
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && Date.now() >= deadline) throw new DataDirLocked(dataDir, waitingFor);
    if (createExclusive(dataDir, path, content())) break;
    const current = readEntry(path);
    if (current === null) continue;
    if (isHeld(dataDir, current)) throw new DataDirLocked(dataDir, infoOf(current.record));
    const outcome = takeOver(dataDir, current, content());
    if (outcome === 'won') break;
    if (outcome !== 'retry') {
      waitingFor = outcome.busy;
      sleepSync(TAKEOVER_POLL_MS);
    }
  }
  heldHere.set(dataDir, record.id);
  removeLeftovers(dataDir);

  const ownsFile = () => parseRecord(readEntry(path)?.raw ?? '')?.id === record.id;
  let released = false;
  return {
    update(more) {
      if (released) return;
      record = { ...record, ...more, pid: process.pid, id: record.id };
      replaceAtomically(dataDir, path, content());
    },
    release() {
      if (released) return;
      released = true;
      heldHere.delete(dataDir);
      if (ownsFile()) rmSync(path, { force: true });
    },
  };
}
