/** What an SSE id holds: the history position and switch point, or the tail cursor. */
export type ResumePoint = { p: 'h'; ts: number; e: string; s?: unknown } | { p: 't'; c: unknown };

export function encodeEventId(point: ResumePoint): string {
  return Buffer.from(JSON.stringify(point)).toString('base64url');
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
