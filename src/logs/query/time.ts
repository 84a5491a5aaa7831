import { appError } from '../../errors.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const MAX_MS = 8.64e15;

/**
 * A time in a request (a time without zone is UTC): ISO 8601, or epoch milliseconds as a number or a
 * digit string (so `nextEndTimeMs` can be sent back as is).
 */
export function parseTime(value: string | number, field: string): number {
  let ms = Number.NaN;
  if (typeof value === 'number') ms = value;
  else if (/^\d{1,16}$/.test(value)) ms = Number(value);
  else if (ISO_8601.test(value) && isCalendarDate(value)) {
    ms = Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value.length === 10 ? `${value}T00:00:00` : value}Z`);
  }
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_MS) {
    throw appError('validation:request:invalid-body', {
      details: [{ title: 'Invalid fields', render: 'list', items: [`body.${field}: must be an ISO 8601 date-time or epoch milliseconds`] }],
    });
  }
  return ms;
}

/** Date.parse rolls days over (`2024-02-30` is March 1st): a day past the end of its month is refused instead. */
function isCalendarDate(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}
