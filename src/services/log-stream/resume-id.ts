/**
 * What an SSE id holds: the history position and switch point, or the tail cursor. `v` is the format's version
 * (absent: 1; 2 since issue 12, whose aws tail cursors name events by content id and carry a bus position).
 * Versions only add fields: a release reads the fields it knows of any version, so two adjacent releases
 * resume each other's ids during a rolling deploy.
 */
export type ResumePoint = { v?: number } & ({ p: 'h'; ts: number; e: string; s?: unknown } | { p: 't'; c: unknown });

/** The version this release writes. */
export const RESUME_ID_VERSION = 2;

export function encodeEventId(point: ResumePoint): string {
  return Buffer.from(JSON.stringify({ v: RESUME_ID_VERSION, ...point })).toString('base64url');
}

export function decodeEventId(id: string | undefined): ResumePoint | undefined {
  if (id === undefined || id === '' || id.length > 4096) return undefined;
  try {
    const v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8')) as ResumePoint;
    if (v?.p === 'h' && Number.isSafeInteger(v.ts) && typeof v.e === 'string') return v;
    if (v?.p === 't' && v.c !== undefined) return v;
  } catch {
    // fall through
  }
  return undefined;
}
