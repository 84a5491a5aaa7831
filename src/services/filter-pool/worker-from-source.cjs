'use strict';
/*
 * The filter pool's worker, run from the TypeScript source (vitest, tsx). Node cannot load `worker.ts` in a worker
 * thread by itself, and Node 20 does not apply a `--import` loader given in a worker's execArgv, so this file (which
 * the pool's library can load) imports the source through tsx's ESM API. Built code (dist/) loads worker.js directly.
 */
const { readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { pathToFileURL } = require('node:url');

const manifest = require.resolve('tsx/package.json');
const entry = JSON.parse(readFileSync(manifest, 'utf8')).exports['./esm/api'].import.default;
const source = pathToFileURL(join(__dirname, 'worker.ts')).href;

// Named, not `default`: the pool's library wraps a CommonJS module so that its `default` is module.exports itself.
module.exports = {
  filterBatch: import(pathToFileURL(join(dirname(manifest), entry)).href)
    .then((tsx) => tsx.tsImport(source, source))
    .then((module) => module.filterBatch),
};
