// Tenant A's heaviest requests (issue 11), each at the API's limits as the README's "Limits" table states them, and
// what makes an answer to each of them honest. Written against the documented limits, not against Berth's code
// (the reliability suite never imports it): a limit that changes breaks these requests with a 400, which the test
// reports as "the test's request was refused" rather than pass unnoticed.
import { REGION, STREAM_PREFIX, type NoisyTenant } from './noisy-world.js';

/** README "Limits": depth ≤ 16, ≤ 256 nodes, regex ≤ 512 characters, values ≤ 1,024, `in` ≤ 100 values; body 1 MiB. */
export const LIMITS = {
  depth: 16,
  nodes: 256,
  regexLength: 512,
  valueLength: 1024,
  inValues: 100,
  bodyBytes: 1024 * 1024,
  ingestEvents: 10_000,
  rows: 10_000,
} as const;

export type FilterNode = Record<string, unknown>;

/** Text no seeded or ingested message holds (the messages are ASCII without `zq`). */
const NEVER = 'zq';

/**
 * The regex whose evaluation costs most: no literal a match must contain, so nothing narrows the rows the database
 * returns (the whole page, 10,001 rows, is read and every row goes through RE2), counted repetitions and alternatives
 * that give RE2 many states, 512 characters, and no match in the data (the answer is a short page, never rows).
 */
export function worstRegex(): string {
  const alternatives = ['[aeiou][^\\n]{100}', '[0-9]{3}\\s[a-z]{20}', '\\w{30}\\W{30}', '[a-f0-9]{32}[^\\n]{60}'];
  // A 30-digit run with something after it ends every match: no message has one; the alternatives add states, not
  // literals (runs of consonants then digits).
  const tail = ')[0-9]{30}(?:[a-z]{2,9}|[^\\n]{40})$';
  for (let i = 0; ; i++) {
    const next = `[b-df-hj-np-tv-z]{${3 + (i % 5)}}[0-9]{${4 + (i % 7)}}`;
    const longer = `(?:${[...alternatives, next].join('|')}${tail}`;
    if (longer.length > LIMITS.regexLength) return `(?:${alternatives.join('|')}${tail}`;
    alternatives.push(next);
  }
}

/**
 * A regex with a literal no message contains: the database must look at every event of the window (100,000+) for it
 * and finds none, so the answer is no rows and no older page.
 */
export function scanRegex(): string {
  return `${NEVER}[0-9a-z]{4,40}(?:\\.|-|_)?[a-z0-9]{1,200}`;
}

function padded(prefix: string, length: number): string {
  return (prefix + '-'.repeat(length)).slice(0, length);
}

/**
 * 241 leaves, none of which any event matches: `in` lists of 100 long strings, case-insensitive `contains` of 1,024
 * characters (a regex of folding classes in SQL), JSON comparisons, levels and stream prefixes, so every row of the
 * window is tested against all of them. With `inProcess`, one leaf is a literal-free regex: the database can then
 * narrow nothing, and all 241 leaves are evaluated in Berth's process over a whole page.
 */
function wideLeaf(i: number, inProcess: boolean): FilterNode {
  if (inProcess && i === 0) return { kind: 'text', op: 'regex', value: worstRegex() };
  switch (i % 8) {
    case 0:
      return {
        kind: 'field',
        path: `user.id`,
        op: 'in',
        value: Array.from({ length: LIMITS.inValues }, (_, v) => padded(`${NEVER}-${i}-${v}`, 56)),
      };
    case 1:
      return { kind: 'text', op: 'contains', value: padded(`${NEVER}-Order-${i}`, LIMITS.valueLength) };
    case 2:
      return { kind: 'field', path: 'amount', op: 'gt', value: 1e9 + i };
    case 3:
      return { kind: 'field', path: 'code', op: 'eq', value: `${NEVER}-code-${i}` };
    case 4:
      return { kind: 'field', path: `nested.${NEVER}${i}.deeper.still`, op: 'exists' };
    case 5:
      return { kind: 'stream', op: 'prefix', value: `${NEVER}/${i}` };
    case 6:
      return { kind: 'text', op: 'startsWith', value: padded(`${NEVER}start${i}`, 200) };
    default:
      return { kind: 'field', path: 'msg', op: 'contains', value: `${NEVER}-msg-${i}` };
  }
}

/** The widest filter the limits accept: 16 levels deep (a spine of `or`s), 256 nodes, matching no event. */
export function widestFilter(inProcess: boolean): FilterNode {
  const spine = LIMITS.depth - 1;
  const leaves = LIMITS.nodes - spine;
  const perLevel = Math.floor(leaves / LIMITS.depth);
  let next = 0;
  const take = (n: number) => Array.from({ length: n }, () => wideLeaf(next++, inProcess));
  // The deepest `or` (at depth 15) holds leaves only, at depth 16; every `or` above holds leaves and the next one.
  let node: FilterNode = { kind: 'or', nodes: take(leaves - perLevel * (spine - 1)) };
  for (let level = spine - 1; level >= 1; level--) node = { kind: 'or', nodes: [...take(perLevel), node] };
  return node;
}

export function filterShape(node: FilterNode): { nodes: number; depth: number } {
  const children = (n: FilterNode): FilterNode[] =>
    Array.isArray(n.nodes) ? (n.nodes as FilterNode[]) : n.node ? [n.node as FilterNode] : [];
  const walk = (n: FilterNode, depth: number): { nodes: number; depth: number } => {
    let nodes = 1;
    let deepest = depth;
    for (const child of children(n)) {
      const sub = walk(child, depth + 1);
      nodes += sub.nodes;
      deepest = Math.max(deepest, sub.depth);
    }
    return { nodes, depth: deepest };
  };
  return walk(node, 1);
}

export interface QueryWindow {
  startMs: number;
  endMs: number;
}

export function queryBody(tenant: NoisyTenant, window: QueryWindow, extra: Record<string, unknown>): string {
  return JSON.stringify({
    startTime: new Date(window.startMs).toISOString(),
    endTime: new Date(window.endMs).toISOString(),
    environmentId: tenant.environmentId,
    ...extra,
  });
}

/**
 * One ingest request at both limits: 10,000 events and as close to 1 MiB as the events' text allows (the messages are
 * padded to fill it). Timestamps are "now" at build time.
 */
export function ingestBody(tenant: NoisyTenant, logStream: string, now: number): string {
  const envelope = JSON.stringify({
    accountId: tenant.accountId,
    region: REGION,
    logGroup: tenant.logGroup,
    logStream,
    events: [],
  });
  const perEvent = JSON.stringify({ message: '', timestamp: now }).length + 1;
  const room = Math.floor((LIMITS.bodyBytes - envelope.length) / LIMITS.ingestEvents) - perEvent;
  const events = Array.from({ length: LIMITS.ingestEvents }, (_, i) => ({
    message: padded(`INFO ingest ${i} `, room).replace(/-/g, 'x'),
    timestamp: now - (LIMITS.ingestEvents - i),
  }));
  const body = JSON.stringify({
    accountId: tenant.accountId,
    region: REGION,
    logGroup: tenant.logGroup,
    logStream,
    events,
  });
  if (Buffer.byteLength(body) > LIMITS.bodyBytes) throw new Error(`ingest body of ${body.length} bytes is over 1 MiB`);
  return body;
}

/** Query string of a history stream over A's whole big group (no start: from its first event; ends at "now"). */
export function streamPath(tenant: NoisyTenant): string {
  const q = new URLSearchParams({
    accountId: tenant.accountId,
    logGroups: tenant.logGroup,
    logStreamPrefix: STREAM_PREFIX,
    region: REGION,
  });
  return `/cloud/logs/stream?${q}`;
}

const ERROR_FIELDS = new Set([
  'code',
  'message',
  'description',
  'action',
  'details',
  'isInternal',
  'metadata',
  'requestId',
]);

/** The spec's error object, or a description of how the body departs from it. */
export function errorObjectProblem(body: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `not JSON: ${body.slice(0, 120)}`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'not an object';
  const o = parsed as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => !ERROR_FIELDS.has(k));
  if (extra.length > 0) return `fields outside the error object: ${extra.join(', ')}`;
  if (typeof o.code !== 'string' || !/^[a-z0-9-]+:[a-z0-9-]+:[a-z0-9-]+$/.test(o.code)) return 'no valid code';
  if (typeof o.message !== 'string' || o.message === '') return 'no message';
  return undefined;
}

export function errorCode(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** What an answer to A's log query said: rows, `partial`, `unsupported` — or why it is not an honest answer. */
export type QueryVerdict =
  | { kind: 'rows' | 'partial' | 'unsupported'; rows: number }
  | { kind: 'problem'; why: string };

/**
 * What a complete answer holds: `none` for the filters that match no event; `page` for a query whose window holds far
 * more than 10,000 events — a full page newest first, never split inside a millisecond (so it may stop a few rows short
 * of 10,000), with a cursor to the older rows.
 */
export type Expected = 'none' | 'page';

/**
 * A 200 of the log query is honest when it is the spec's shape, its rows are newest first, `partial` goes with
 * `missedSources`, and the rows are what was asked (`expected`); a predicate reported `unsupported` makes the result
 * broader, so then only the shape is checked.
 */
export function queryVerdict(body: string, expected: Expected): QueryVerdict {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { kind: 'problem', why: 'body is not JSON' };
  }
  const rows = r.rows as { timestamp: number }[] | undefined;
  const next = r.nextEndTimeMs;
  if (!Array.isArray(rows) || typeof r.resultCount !== 'number' || typeof next !== 'number')
    return { kind: 'problem', why: 'not the log query response' };
  if (typeof r.partial !== 'boolean' || !Array.isArray(r.missedSources) || !Array.isArray(r.unsupported))
    return { kind: 'problem', why: 'no partial, missedSources or unsupported' };
  if (r.resultCount !== rows.length) return { kind: 'problem', why: `resultCount ${r.resultCount} ≠ ${rows.length}` };
  for (let i = 1; i < rows.length; i++)
    if (rows[i]!.timestamp > rows[i - 1]!.timestamp) return { kind: 'problem', why: 'rows not newest first' };
  if (r.partial !== r.missedSources.length > 0) return { kind: 'problem', why: 'partial disagrees with missedSources' };
  if (r.unsupported.length > 0) return { kind: 'unsupported', rows: rows.length };
  if (expected === 'none' && rows.length > 0) return { kind: 'problem', why: `${rows.length} rows match nothing` };
  if (rows.length > LIMITS.rows) return { kind: 'problem', why: `${rows.length} rows, over 10,000` };
  if (r.partial) return { kind: 'partial', rows: rows.length };
  if (expected === 'page') {
    const oldest = rows[rows.length - 1]?.timestamp;
    if (oldest === undefined || rows.length < LIMITS.rows / 2) return { kind: 'problem', why: `${rows.length} rows` };
    if (next <= 0 || next > oldest)
      return { kind: 'problem', why: `nextEndTimeMs ${next} with older rows below ${oldest} in the window` };
  }
  return { kind: 'rows', rows: rows.length };
}

/** The histogram's most buckets (issue 13: `buckets` 1–200). */
export const MAX_BUCKETS = 200;

/**
 * A 200 of the histogram is honest when it is its shape (every bucket of the window, contiguous, oldest first;
 * `partial` going with `missedSources`) and, for a filter that matches nothing and reports nothing `unsupported`, every
 * count is zero.
 */
export function histogramVerdict(body: string, window: QueryWindow): QueryVerdict {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { kind: 'problem', why: 'body is not JSON' };
  }
  const buckets = r.buckets as { startMs: number; endMs: number; counts: Record<string, number> }[] | undefined;
  if (!Array.isArray(buckets) || typeof r.partial !== 'boolean' || !Array.isArray(r.missedSources))
    return { kind: 'problem', why: 'not the histogram response' };
  if (!Array.isArray(r.unsupported)) return { kind: 'problem', why: 'no unsupported' };
  if (buckets.length !== MAX_BUCKETS) return { kind: 'problem', why: `${buckets.length} buckets` };
  if (buckets[0]!.startMs !== window.startMs || buckets[buckets.length - 1]!.endMs !== window.endMs)
    return { kind: 'problem', why: 'buckets do not span the window' };
  for (let i = 1; i < buckets.length; i++)
    if (buckets[i]!.startMs !== buckets[i - 1]!.endMs + 1) return { kind: 'problem', why: 'buckets not contiguous' };
  if (r.partial !== r.missedSources.length > 0) return { kind: 'problem', why: 'partial disagrees with missedSources' };
  const counted = buckets.reduce((n, b) => n + Object.values(b.counts).reduce((m, c) => m + c, 0), 0);
  if (r.unsupported.length > 0) return { kind: 'unsupported', rows: counted };
  if (r.partial) return { kind: 'partial', rows: counted };
  if (counted > 0) return { kind: 'problem', why: `${counted} rows counted for a filter that matches nothing` };
  return { kind: 'rows', rows: 0 };
}
