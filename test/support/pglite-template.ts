import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_TEMPLATE_ENV } from './database.js';

/**
 * Vitest global setup: one fresh PGlite cluster, dumped once, from which every in-memory test database starts
 * (`StoreTarget`'s `template`). Creating the cluster takes PGlite 3–4 s of CPU; loading the dump about 0.6 s, and
 * the suite opens a few hundred empty databases. The dump is of a cluster nobody has written to, so each database
 * is as fresh as one PGlite creates itself (migrations still run per test, as before).
 */
export default async function setup(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-pglite-template-'));
  const file = join(dir, 'fresh.tar');
  const lite = await PGlite.create();
  try {
    await writeDump(lite, file);
  } finally {
    await lite.close();
  }
  process.env[PGLITE_TEMPLATE_ENV] = file;
  return () => rmSync(dir, { recursive: true, force: true });
}

/** Writes `lite`'s data directory to `file` as a dump a store can start from (`StoreTarget`'s `template`). */
export async function writeDump(lite: PGlite, file: string): Promise<void> {
  const dump = await lite.dumpDataDir('none');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
}
