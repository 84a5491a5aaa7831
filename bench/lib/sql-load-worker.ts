import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CompiledQuery } from 'kysely';
import { openStore, type Store, type StoreTarget } from '../../src/store/db.js';
import type { ReplayParam, ReplayStatement } from './sql-capture.js';
import type { SqlLoadOptions, SqlLoadResult } from './sql-load.js';
import { quantile } from './stats.js';

/**
 * The SQL baseline, in its own process (forked by `startSqlLoad`): Berth's own store (same
 * driver, pool and timeouts) replays captured requests from `concurrency` concurrent loops.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BEGIN = /^\s*begin\b/i;

let store: Store | undefined;
let runs = 0;

async function run(options: SqlLoadOptions): Promise<SqlLoadResult> {
  const db = store!.db;
  const tag = `b${process.pid.toString(36)}r${runs++}`;
  const unique = new Set(options.unique ?? []);
  let counter = 0;
  const fresh = (value: ReplayParam): ReplayParam =>
    typeof value === 'string' && unique.has(value)
      ? UUID.test(value)
        ? randomUUID()
        : `${value}-${tag}-${counter++}`
      : value;
  const compile = (s: ReplayStatement) => CompiledQuery.raw(s.sql, unique.size === 0 ? s.params : s.params.map(fresh));
  const execute = async (request: ReplayStatement[]) => {
    // Berth takes a pooled connection per statement, except inside a transaction.
    if (request.some((s) => BEGIN.test(s.sql))) {
      await db.connection().execute(async (conn) => {
        for (const s of request) await conn.executeQuery(compile(s));
      });
    } else for (const s of request) await db.executeQuery(compile(s));
  };

  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const until = started + options.durationS * 1000;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < until) {
        const request = options.requests[next++ % options.requests.length]!;
        const t0 = performance.now();
        await execute(request);
        const t1 = performance.now();
        // Counted as autocannon counts: only what completed within the run.
        if (t1 <= until) latencies.push(t1 - t0);
      }
    }),
  );
  return {
    rate: latencies.length / options.durationS,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    count: latencies.length,
    durationS: options.durationS,
  };
}

process.on('message', (message: { type: 'open'; target: StoreTarget } | { type: 'run'; options: SqlLoadOptions }) => {
  const work = message.type === 'open' ? openStore(message.target).then((s) => void (store = s)) : run(message.options);
  work.then(
    (result) => process.send!({ result: result ?? null }),
    (error: unknown) => process.send!({ error: String((error as Error)?.stack ?? error) }),
  );
});
process.on('disconnect', () => {
  void (store?.close() ?? Promise.resolve()).finally(() => process.exit(0));
});
