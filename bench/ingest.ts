/**
 * `berth logs ingest` into the embedded default (PGlite), straight to the
 * database: lines per second for 200,000 mixed JSON and text lines.
 * Baseline, same run: one INSERT per event (the obvious loop), on 5,000 lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ingestCommand } from '../src/cli/ingest.js';
import { loadConfig } from '../src/config.js';
import { loadFixture } from '../src/fixtures/load.js';
import { insertLocalEvents } from '../src/store/repositories/log-events.js';
import { openConfiguredStore } from '../src/runtime.js';

const LINES = Number(process.env.BENCH_INGEST_LINES ?? 200_000);
const BASELINE_LINES = 5_000;

function lines(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      i % 3 === 0
        ? JSON.stringify({ level: i % 10 === 0 ? 'error' : 'info', msg: `request ${i}`, latencyMs: i % 700 })
        : `INFO worker ${i % 8} finished job ${i} in ${i % 900}ms`,
    );
  }
  return `${out.join('\n')}\n`;
}

export async function benchIngest(databaseUrl?: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-ingest-'));
  try {
    const config = loadConfig({
      BERTH_DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'silent',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    });
    const opened = await openConfiguredStore(config);
    await loadFixture(opened.store.db, {
      organizations: [{ id: 'o', name: 'O', permittedIdentityProviders: [] }],
      cloudAccounts: [{ id: 'a', organizationId: 'o', provider: 'local', region: 'r' }],
    });
    const sample = lines(BASELINE_LINES).trimEnd().split('\n');
    const t0 = performance.now();
    for (const message of sample) {
      await insertLocalEvents(opened.store.db, [
        {
          cloudAccountId: 'a',
          region: 'r',
          logGroup: `baseline-${t0}`,
          logStream: 's',
          timestamp: Date.now(),
          message,
        },
      ]);
    }
    const baselineRate = BASELINE_LINES / ((performance.now() - t0) / 1000);
    await opened.close();

    const file = join(dir, 'input.log');
    writeFileSync(file, lines(LINES));
    const t1 = performance.now();
    await ingestCommand(config, file, {
      account: 'a',
      region: 'r',
      group: `g-${t1}`,
      stream: 's',
      format: 'auto',
      progress: false,
    });
    const rate = LINES / ((performance.now() - t1) / 1000);
    console.log(
      `\n## berth logs ingest → ${databaseUrl ? 'PostgreSQL' : 'PGlite'} (direct), ${LINES.toLocaleString('en')} lines`,
    );
    console.log(
      `  baseline: one INSERT per event (${BASELINE_LINES} lines)   ${Math.round(baselineRate).toLocaleString('en').padStart(9)} lines/s`,
    );
    console.log(
      `  berth logs ingest (batched)                        ${Math.round(rate).toLocaleString('en').padStart(9)} lines/s  ×${(rate / baselineRate).toFixed(1)} of baseline`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
