import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { appError } from '../../core/errors.js';
import { MAX_TIME_MS } from '../../core/log-time.js';
import { holdsOnlyStorableText } from '../../core/storable-text.js';
import type { AnyStreamSource } from '../../providers/log-stream/port.js';

/**
 * What an SSE id holds: the history position and switch point, or the tail cursor. `v` is the format's version
 * (absent: 1; 2 since issue 12, whose aws tail cursors name events by content id and carry a bus position).
 * Versions only add fields: a release reads the fields it knows of any version, so two adjacent releases
 * resume each other's ids during a rolling deploy.
 */
export type ResumePoint = { v?: number } & ({ p: 'h'; ts: number; e: string; s?: unknown } | { p: 't'; c: unknown });

/** The version this release writes. */
export const RESUME_ID_VERSION = 2;

/** Characters of an SSE id at most; every id a source makes stays below (their tests check it). */
const MAX_ID_LENGTH = 4096;
/** An event id: the local ones are at most 128 characters, CloudWatch's about 56. */
const MAX_EVENT_ID_LENGTH = 256;

/**
 * The known fields of every version this release can meet: its own, the ones before, and the next release's
 * (adjacent releases during a rolling deploy). Other fields are allowed (later versions add them); the known ones
 * must have exactly these types.
 */
const Version = Type.Optional(Type.Integer({ minimum: 1, maximum: RESUME_ID_VERSION + 1 }));
const Time = Type.Integer({ minimum: 0, maximum: MAX_TIME_MS });
const ResumePointSchema = Type.Union([
  Type.Object({
    v: Version,
    p: Type.Literal('h'),
    ts: Time,
    e: Type.String({ maxLength: MAX_EVENT_ID_LENGTH }),
    // The cursors are the source's: `checkResumable` asks it.
    s: Type.Optional(Type.Unknown()),
  }),
  Type.Object({ v: Version, p: Type.Literal('t'), c: Type.Unknown() }),
]);

export function encodeEventId(point: ResumePoint): string {
  return Buffer.from(JSON.stringify({ v: RESUME_ID_VERSION, ...point })).toString('base64url');
}

/** Whether every number in a parsed JSON value is a time or a count: an integer from 0 to MAX_TIME_MS. */
function numbersInRange(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'number') {
      if (!Number.isInteger(v) || v < 0 || v > MAX_TIME_MS) return false;
    } else if (Array.isArray(v)) pending.push(...v);
    else if (v !== null && typeof v === 'object') pending.push(...Object.values(v));
  }
  return true;
}

const forged = (description: string) =>
  appError('logs:stream:invalid-parameters', { description, metadata: { parameter: 'Last-Event-ID' } });

/**
 * The resume point of a Last-Event-ID; undefined when there is none or it is no id of ours at all (not base64url
 * of a JSON object: the stream starts over). An id of ours that was forged or corrupted — truncated, over-long,
 * a known field of the wrong type, a time outside 0 … 9999-12-31 or not an integer, U+0000 or a lone surrogate
 * anywhere, a version this release cannot know — throws 400 `logs:stream:invalid-parameters`. Pure, so it runs
 * before any statement; the positions inside are checked against the stream's source by `checkResumable`.
 */
export function decodeEventId(id: string | undefined): ResumePoint | undefined {
  if (id === undefined || id === '') return undefined;
  if (id.length > MAX_ID_LENGTH) throw forged(`Last-Event-ID is longer than ${MAX_ID_LENGTH} characters.`);
  if (!/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
  const text = Buffer.from(id, 'base64url').toString('utf8');
  // Every id this server issues is a JSON object; anything else was never one of ours.
  if (!text.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw forged('Last-Event-ID is not a position this server issued: use the id of a message it sent.');
  }
  if (!holdsOnlyStorableText(value) || !numbersInRange(value) || !Value.Check(ResumePointSchema, value))
    throw forged('Last-Event-ID is not a position this server issued: use the id of a message it sent.');
  return value as ResumePoint;
}

/**
 * Refuses (400, before the stream starts) a resume point whose cursor the stream's source cannot restore: a tail
 * cursor, or a history id's switch point, of another source or made up.
 */
export function checkResumable(resume: ResumePoint | undefined, source: Pick<AnyStreamSource, 'restore'>): void {
  const cursor = resume === undefined ? undefined : resume.p === 't' ? resume.c : resume.s;
  if (cursor !== undefined && source.restore(cursor) === undefined)
    throw forged('Last-Event-ID does not resume this stream: use the id of a message of the same stream.');
}
