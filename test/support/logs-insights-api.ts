// POST /cloud/logs/logs-insights as a client sees it: the path, the answer's shape, and what every
// successful answer must satisfy.
import { expect } from 'vitest';
import type { TestResponse } from './app.js';

export const LOGS_INSIGHTS_PATH = '/cloud/logs/logs-insights';

export interface LogsInsightsRow {
  timestamp: number;
  level: string;
  message: string;
  logStream: string;
  sourceId: string;
  logSourceId: string;
  eventId?: string;
}

export interface LogsInsightsResult {
  rows: LogsInsightsRow[];
  resultCount: number;
  nextEndTimeMs: number;
  partial: boolean;
  missedSources: string[];
  unsupported: string[];
}

/** A 200 answer (else its body shows in the failure) whose resultCount counts its rows, newest first. Returns the body. */
export function expectLogsInsightsOk(res: TestResponse<LogsInsightsResult>): LogsInsightsResult {
  expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({
    status: 200,
    body: undefined,
  });
  const body = res.body;
  expect(body.resultCount).toBe(body.rows.length);
  for (let i = 1; i < body.rows.length; i++)
    expect(body.rows[i - 1]!.timestamp).toBeGreaterThanOrEqual(body.rows[i]!.timestamp);
  return body;
}
