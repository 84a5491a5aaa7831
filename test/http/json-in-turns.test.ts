import fastJsonStringify from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import type { LogQueryResult, LogRow } from '../../src/core/log-query/types.js';
import { logQueryJson } from '../../src/http/json-in-turns.js';
import { LogQueryResponse } from '../../src/core/schemas/log-query.js';

const bySchema = fastJsonStringify(LogQueryResponse as never);

function row(i: number, extra: Partial<LogRow> = {}): LogRow {
  return {
    timestamp: 1_700_000_000_000 + i,
    level: (['INFO', 'WARN', 'ERROR', 'UNKNOWN'] as const)[i % 4]!,
    message: `line ${i} "quoted" \\ back\nslash \u2028 \u0000 ☃ 😀 <script>`,
    logStream: `stream-${i % 3}`,
    sourceId: 'mi-1',
    logSourceId: 'ls-1',
    ...(i % 5 === 0 ? {} : { eventId: `e${i}` }),
    ...extra,
  };
}

function result(rows: LogRow[], more: Partial<LogQueryResult> = {}): LogQueryResult {
  return {
    rows,
    resultCount: rows.length,
    nextEndTimeMs: 1_700_000_000_000,
    partial: false,
    missedSources: [],
    unsupported: [],
    ...more,
  };
}

describe('logQueryJson: the log query answer serialized in turns', () => {
  it.each([0, 1, 499, 500, 501, 1_234])(
    'says what the response schema says, key order included (%i rows)',
    async (n) => {
      const r = result(
        Array.from({ length: n }, (_, i) => row(i)),
        { partial: n % 2 === 1, missedSources: n > 0 ? ['a', 'b'] : [], unsupported: n > 1 ? ['why "not"'] : [] },
      );
      const ours = await logQueryJson(r);
      expect(JSON.parse(ours)).toEqual(JSON.parse(bySchema(r)));
      // Same keys in the same order, row by row.
      expect(Object.keys(JSON.parse(ours))).toEqual(Object.keys(JSON.parse(bySchema(r))));
      const rowsOurs = (JSON.parse(ours) as { rows: object[] }).rows;
      const rowsSchema = (JSON.parse(bySchema(r)) as { rows: object[] }).rows;
      rowsOurs.forEach((o, i) => expect(Object.keys(o)).toEqual(Object.keys(rowsSchema[i]!)));
    },
  );

  it('leaves out fields the schema does not have', async () => {
    const sneaky = { ...row(1), accountId: 'secret', internal: 1 } as LogRow;
    const parsed = JSON.parse(await logQueryJson(result([sneaky], { extra: true } as never))) as {
      rows: Record<string, unknown>[];
    };
    expect(Object.keys(parsed)).toEqual([
      'rows',
      'resultCount',
      'nextEndTimeMs',
      'partial',
      'missedSources',
      'unsupported',
    ]);
    expect(parsed.rows[0]).not.toHaveProperty('accountId');
    expect(parsed.rows[0]).not.toHaveProperty('internal');
  });

  it('lets other work run between slices of a large page', async () => {
    let turns = 0;
    let done = false;
    const json = logQueryJson(result(Array.from({ length: 10_000 }, (_, i) => row(i)))).finally(() => {
      done = true;
    });
    while (!done) {
      await new Promise((r) => setImmediate(r));
      turns++;
    }
    await json;
    // 10,000 rows at 500 a turn: 20 slices, with the event loop free between them.
    expect(turns).toBeGreaterThanOrEqual(15);
  });
});
