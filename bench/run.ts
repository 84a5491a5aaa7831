/**
 * `npm run bench`: every benchmark, each against a baseline measured in the
 * same run. Not part of `npm test`. Data persists in .bench-data/ between runs.
 * BENCH_DATABASE_URL=postgres://… also runs the log query on PostgreSQL.
 */
import { resolve } from 'node:path';
import { benchLogQuery } from './log-query.js';
import { benchIngest } from './ingest.js';
import { benchStreamFanout } from './stream-fanout.js';

const only = process.argv[2];
console.log(`# Berth benchmarks (node ${process.version})`);
if (!only || only === 'log-query') {
  await benchLogQuery({ kind: 'pglite', dataDir: resolve('.bench-data/pglite') }, 'PGlite');
  if (process.env.BENCH_DATABASE_URL)
    await benchLogQuery({ kind: 'postgres', url: process.env.BENCH_DATABASE_URL }, 'PostgreSQL');
}
if (!only || only === 'ingest') {
  await benchIngest();
  if (process.env.BENCH_DATABASE_URL) await benchIngest(process.env.BENCH_DATABASE_URL);
}
if (!only || only === 'stream') await benchStreamFanout();
