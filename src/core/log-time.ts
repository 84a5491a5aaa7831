import { appError, listDetail } from './errors.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * The last accepted time, 9999-12-31T23:59:59.999Z. Every stored time has a four-digit year, so it is
 * written back as ISO 8601 (the stream's wire form) and is a `bigint` or `timestamptz` PostgreSQL takes.
 */
export const MAX_TIME_MS = 253_402_300_799_999;

const RULE = `must be an ISO 8601 date-time or epoch milliseconds, from 0 (1970-01-01T00:00:00Z) to ${MAX_TIME_MS} (9999-12-31T23:59:59.999Z)`;

/** Whether epoch milliseconds are an accepted time: an integer in [0, MAX_TIME_MS]. */
export function isTimeInRange(ms: number): boolean {
  return Number.isInteger(ms) && ms >= 0 && ms <= MAX_TIME_MS;
}

/** The 400 of a time out of form or range; `path` names the field (`body.events[3].timestamp`). */
export function invalidTime(path: string) {
  return appError('validation:request:invalid-body', { details: [listDetail('Invalid fields', [`${path}: ${RULE}`])] });
}

/**
 * A time as the ingest and fixture schemas take it (epoch milliseconds, or an RFC 3339 date-time the
 * schema has checked) in epoch milliseconds; NaN when it is outside [0, MAX_TIME_MS] — an offset can move
 * `9999-12-31T23:59:59-05:00` past the end.
 */
export function epochMsOf(value: number | string): number {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  return isTimeInRange(ms) ? ms : Number.NaN;
}

/**
 * A time in a request (a time without zone is UTC): ISO 8601, or epoch milliseconds as a number or a
 * digit string (so `nextEndTimeMs` can be sent back as is), within [0, MAX_TIME_MS].
 */
export function parseTime(value: string | number, field: string): number {
  let ms = Number.NaN;
  if (typeof value === 'number') ms = value;
  else if (/^\d{1,16}$/.test(value)) ms = Number(value);
  else if (ISO_8601.test(value) && isCalendarDate(value)) {
    ms = Date.parse(
      /(Z|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value.length === 10 ? `${value}T00:00:00` : value}Z`,
    );
  }
  if (!isTimeInRange(ms)) throw invalidTime(`body.${field}`);
  return ms;
}

/** Date.parse rolls days over (`2024-02-30` is March 1st): a day past the end of its month is refused instead. */
function isCalendarDate(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}
