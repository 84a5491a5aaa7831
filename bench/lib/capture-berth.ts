import type { BenchDatabase } from './berth.js';
import { startBerth } from './berth.js';
import { progress } from './runner-result.js';
import { captureRequest, type ReplayStatement, replayable, startSqlCapture } from './sql-capture.js';

/** One request to capture: sends it to Berth at `url` and checks the answer. */
export type CapturedRequest = (url: string) => Promise<void>;

/**
 * The SQL each request runs in Berth, taken from a Berth process that reaches `db` (PostgreSQL)
 * through the capturing proxy. Each request is sent once to warm up (caches fill, as under load),
 * then captured. `requests` may be made from that Berth (e.g. by walking pages for their cursors). Returns the statements of each request, in order, ready to replay.
 */
export async function captureBerthSql(
  bench: string,
  db: BenchDatabase,
  requests: CapturedRequest[] | ((url: string) => Promise<CapturedRequest[]>),
  env: Record<string, string> = {},
): Promise<ReplayStatement[][]> {
  if (db.kind !== 'postgres' || db.url === undefined) throw new Error('captureBerthSql needs PostgreSQL');
  const capture = await startSqlCapture(db.url);
  try {
    const berth = await startBerth({ ...db, env: { DATABASE_URL: capture.url } }, { LOG_LEVEL: 'warn', ...env });
    try {
      const out: ReplayStatement[][] = [];
      const list = typeof requests === 'function' ? await requests(berth.url) : requests;
      for (const send of list) {
        await send(berth.url);
        const statements = await captureRequest(capture, () => send(berth.url));
        out.push(await replayable(db.url, statements));
      }
      const counts = out.map((s) => s.length).join(', ');
      progress(bench, `captured the SQL of ${out.length} request(s): ${counts} statement(s) each`);
      return out;
    } finally {
      await berth.stop();
    }
  } finally {
    await capture.close();
  }
}

/** The statements as one line each, for a result's notes. */
export function describeSql(statements: ReplayStatement[]): string {
  return statements.map((s) => s.sql.replace(/\s+/g, ' ').slice(0, 160)).join(' | ');
}
