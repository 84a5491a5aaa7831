#!/usr/bin/env node
// `npm run build`: the server (tsc into dist/) and the log explorer (Vite into dist/ui/).
// With --if-stale (`npm start`, `npm install`'s prepare step) it builds only when an input changed since the last
// build: a hash of every input file and the Node version is kept in dist/.build-hash, so a second `npm start`
// starts at once and a `git pull` that changed a source rebuilds.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const STAMP = join(root, 'dist', '.build-hash');
const INPUTS = ['src', 'ui', 'tsconfig.json', 'tsconfig.build.json', 'vite.config.ts', 'package-lock.json'];

function* files(path) {
  if (!existsSync(path)) return;
  if (statSync(path).isFile()) {
    yield path;
    return;
  }
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    yield* files(join(path, entry.name));
  }
}

function inputsHash() {
  const hash = createHash('sha256').update(process.version);
  for (const input of INPUTS) {
    for (const file of files(join(root, input))) {
      hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex');
}

function run(bin, args) {
  const result = spawnSync(join(root, 'node_modules', '.bin', bin), args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const hash = inputsHash();
const current = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : '';
if (process.argv.includes('--if-stale') && current === hash && existsSync(join(root, 'dist', 'ui', 'index.html'))) {
  process.exit(0);
}
rmSync(STAMP, { force: true });
const started = Date.now();
run('tsc', ['-p', 'tsconfig.build.json']);
run('vite', ['build', '--logLevel', 'warn']);
writeFileSync(STAMP, `${hash}\n`);
if (process.argv.includes('--if-stale')) {
  process.stderr.write(`berth: built in ${((Date.now() - started) / 1000).toFixed(1)} s (sources changed)\n`);
}
