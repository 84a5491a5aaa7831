import type { LogQueryResult, LogRow } from '../core/log-query/types.js';
import { cpuTurn } from '../services/cpu-turns.js';

/** Rows serialized in one turn of the event loop (~0.5 ms of work for 500 rows). */
const ROWS_PER_TURN = 500;

/**
 * A log query's answer as JSON, exactly as the response schema writes it, serialized a few hundred rows per turn
 * of the event loop: a page of 10,000 rows (about 4 MB) took the schema's serializer 25–100 ms in one block, during
 * which no other tenant's request was read or answered. Native `JSON.stringify` on each row, with the schema's
 * fields only and in its order, is also several times faster.
 */
export async function logQueryJson(result: LogQueryResult): Promise<string> {
  const { rows } = result;
  const parts: string[] = [];
  if (rows.length <= ROWS_PER_TURN) parts.push(rows.map(rowJson).join(','));
  else {
    // A larger page is written in CPU turns (services/cpu-turns.ts): one slice at a time in the whole process,
    // taken round-robin by tenant, so many large answers at once cost another tenant's request one slice of
    // work, not one slice of each.
    for (let at = 0; at < rows.length; at += ROWS_PER_TURN) {
      const release = await cpuTurn();
      try {
        parts.push(
          rows
            .slice(at, at + ROWS_PER_TURN)
            .map(rowJson)
            .join(','),
        );
      } finally {
        release();
      }
    }
  }
  return (
    `{"rows":[${parts.join(',')}],"resultCount":${integer(result.resultCount)},` +
    `"nextEndTimeMs":${integer(result.nextEndTimeMs)},"partial":${result.partial === true},` +
    `"missedSources":${JSON.stringify(result.missedSources.map(String))},` +
    `"unsupported":${JSON.stringify(result.unsupported.map(String))}}`
  );
}

/** One row as the schema writes it, built as text: no intermediate object per row (10,000 a page). */
function rowJson(row: LogRow): string {
  const eventId = row.eventId === undefined ? '' : `,"eventId":${JSON.stringify(row.eventId)}`;
  return (
    `{"timestamp":${integer(row.timestamp)},"level":${JSON.stringify(row.level)},` +
    `"message":${JSON.stringify(row.message)},"logStream":${JSON.stringify(row.logStream)},` +
    `"sourceId":${JSON.stringify(row.sourceId)},"logSourceId":${JSON.stringify(row.logSourceId)}${eventId}}`
  );
}

/** As the schema's `integer`: a whole number (the serializer truncates). */
function integer(n: number): number {
  return Number.isFinite(n) ? Math.trunc(n) : 0;
}
