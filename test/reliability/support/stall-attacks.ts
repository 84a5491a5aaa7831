// The attacks of issue 20 ("No tenant can stall another"), as tenant A's viewer makes them, each from its own
// keep-alive connections at A's client address (127.0.0.2), looping until stopped; and what makes an answer to each of
// them honest. Written against the API as documented, never against Berth's code.
import { errorCode, errorObjectProblem, queryBody, queryVerdict, type FilterNode } from './noisy-heavy.js';
import { ADDRESS, clientAgent, exchange, type Exchange } from './noisy-http.js';
import { percentile } from './noisy-report.js';
import { openStream, type SseOutcome, type SseStream } from './stall-sse.js';
import { HUGE_STREAM, PREFIXES, REGION, type StallWorld } from './stall-world.js';

/** The refusal of a filter too costly to evaluate (issue 20): an honest answer to every attack with a filter. */
export const TOO_COSTLY = 'logs:filter:too-costly';

/**
 * Deadlines from Berth's defaults: a log query stops at LOG_QUERY_DEADLINE_MS (30 s) after waiting at most
 * HEAVY_QUEUE_MS (2 s) for its turn, plus 3 s to send its answer; a stream's head comes after at most HEAVY_QUEUE_MS
 * and a history stream over one message ends like a query (35 s); a live tail delivers an event within 10 s of its
 * ingest being acknowledged (the local tail is woken by the ingest; README: polled every second otherwise).
 */
export const DEADLINES = { query: 35_000, streamHead: 10_000, streamEnd: 35_000, tailDelivery: 10_000, ingest: 30_000 };
/** The client waits this much past a deadline before giving up (an answer in between is reported late). */
export const GRACE_MS = 5_000;

/** The attack regexes of the issue, on the log query (filter tree text leaf, op `regex`). */
export const REGEX_31 = '(?:a[ab]{998}c)|(?:b[ab]{998}c)';
/**
 * The 507-character alternation "of the same kind": `(?:a[ab]{80}c)|(?:b[ab]{81}c)|…` with as many alternatives as the
 * 512-character limit takes (32).
 */
export function regexAlternation(): string {
  const alternatives: string[] = [];
  for (let i = 0; ; i++) {
    const next = `(?:${i % 2 === 0 ? 'a' : 'b'}[ab]{${80 + i}}c)`;
    if ([...alternatives, next].join('|').length > 512) return alternatives.join('|');
    alternatives.push(next);
  }
}
/** The attack pattern of the stream (a CloudWatch filter pattern regex). */
export const STREAM_PATTERN = '%[ab]{600}c|a[ab]{300}c%';

/** One request's end as judged here. */
export interface Outcome {
  status: number;
  ms: number;
  /** rows, partial, unsupported, too-costly, final, events, accepted, 429 … or what went wrong. */
  verdict: string;
  /** Set when the answer is not an honest one, or came late: the test fails on any. */
  problem?: string;
}

/** Verdicts that show the attack was answered on its merits (not only turned away with a 429). */
const EXERCISED = new Set(['rows', 'partial', 'unsupported', 'too-costly', 'final', 'events', 'sign-in-failed']);

export interface AttackReport {
  name: string;
  connections: number;
  requests: number;
  statuses: Record<string, number>;
  verdicts: Record<string, number>;
  p50: number;
  max: number;
  problems: string[];
  moreProblems: number;
  /** Answers on the attack's merits (EXERCISED verdicts). */
  exercised: number;
  /** Figures particular to the attack (events delivered, trickle), for the report. */
  notes: string[];
}

export interface Attack {
  name: string;
  /**
   * One request of each kind the attack sends, one at a time, not counted: the first use of each code path in a fresh
   * process (compiling, loading) is not the attack. At most WARM_UP_MS; a description for the report.
   */
  warmUp(): Promise<string>;
  start(): void;
  /** Stops sending; resolves once every request in flight has ended (each within its client timeout). */
  stop(): Promise<AttackReport>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The warm-up gives up waiting after this long (a stalled Berth is then measured stalled by the attack itself). */
export const WARM_UP_MS = 20_000;

/** Runs `each(i, timeoutMs)` for i = 0 … n-1 one after another within WARM_UP_MS; a note of what it did. */
async function warmUpEach(n: number, each: (i: number, timeoutMs: number) => Promise<unknown>): Promise<string> {
  const started = performance.now();
  let done = 0;
  for (let i = 0; i < n; i++) {
    const left = WARM_UP_MS - (performance.now() - started);
    if (left <= 0) break;
    await Promise.race([each(i, left), sleep(left)]);
    done++;
  }
  return `warm-up: ${done} of ${n} requests, one at a time, in ${((performance.now() - started) / 1000).toFixed(1)} s (not counted)`;
}

/** The parts of an answer every request judges alike: no answer, late, 5xx, an error body not the error object. */
function judgeCommon(r: Pick<Exchange, 'status' | 'ms' | 'body' | 'error' | 'headers'>, deadlineMs: number) {
  const base = { status: r.status, ms: r.ms };
  if (r.status === 0)
    return { ...base, verdict: 'no answer', problem: `no answer (${r.error}) after ${r.ms.toFixed(0)} ms` };
  if (r.ms > deadlineMs) return { ...base, verdict: 'late', problem: `${r.status} after ${r.ms.toFixed(0)} ms` };
  if (r.status >= 500) return { ...base, verdict: `${r.status}`, problem: `${r.status} ${r.body.slice(0, 200)}` };
  if (r.status >= 400) {
    const bad = errorObjectProblem(r.body);
    if (bad !== undefined) return { ...base, verdict: `${r.status}`, problem: `${r.status} body: ${bad}` };
    const code = errorCode(r.body)!;
    if (r.status === 429)
      return r.headers['retry-after'] === undefined
        ? { ...base, verdict: '429', problem: `429 ${code} without Retry-After` }
        : { ...base, verdict: '429' };
    if (r.status === 400 && code === TOO_COSTLY) return { ...base, verdict: 'too-costly' };
    return { ...base, verdict: code, problem: `${r.status} ${code}: a request within the documented limits refused` };
  }
  return undefined;
}

function report(name: string, connections: number, outcomes: Outcome[], notes: string[]): AttackReport {
  const count = (key: (o: Outcome) => string) =>
    outcomes.reduce<Record<string, number>>((acc, o) => {
      acc[key(o)] = (acc[key(o)] ?? 0) + 1;
      return acc;
    }, {});
  const ms = outcomes.map((o) => o.ms).sort((x, y) => x - y);
  const problems = outcomes.filter((o) => o.problem !== undefined).map((o) => `${o.problem}`);
  return {
    name,
    connections,
    requests: outcomes.length,
    statuses: count((o) => String(o.status)),
    verdicts: count((o) => o.verdict),
    p50: percentile(ms, 0.5),
    max: ms.length > 0 ? ms[ms.length - 1]! : Number.NaN,
    problems: problems.slice(0, 5),
    moreProblems: Math.max(0, problems.length - 5),
    exercised: outcomes.filter((o) => EXERCISED.has(o.verdict)).length,
    notes,
  };
}

/** `connections` loops of `once` until stopped; a refusal (429) or no answer waits `backoffMs` before the next. */
function loopAttack(
  name: string,
  connections: number,
  once: () => Promise<Outcome>,
  warmUp: () => Promise<string>,
  notes: () => string[] = () => [],
  backoffMs = 250,
): Attack {
  let stopping = false;
  let running: Promise<Outcome[]> | undefined;
  return {
    name,
    warmUp,
    start() {
      running = Promise.all(
        Array.from({ length: connections }, async () => {
          const outcomes: Outcome[] = [];
          while (!stopping) {
            const o = await once();
            outcomes.push(o);
            if (o.status === 429 || o.status === 0) await sleep(backoffMs);
          }
          return outcomes;
        }),
      ).then((all) => all.flat());
    },
    async stop() {
      stopping = true;
      const outcomes = (await running) ?? [];
      return report(name, connections, outcomes, notes());
    },
  };
}

/** One body an attack sends, and the label its answers are counted under (the report's notes). */
export interface Variant {
  label: string;
  body: string;
}

/** Verdicts per variant, as a note: `label: verdict ×n, …; max ms`. */
function variantNotes(counts: Map<string, Outcome[]>): string[] {
  return [...counts].map(([label, outcomes]) => {
    const verdicts = outcomes.reduce<Record<string, number>>((acc, o) => {
      acc[o.verdict] = (acc[o.verdict] ?? 0) + 1;
      return acc;
    }, {});
    const max = Math.max(...outcomes.map((o) => o.ms));
    return `${label}: ${Object.entries(verdicts)
      .map(([v, n]) => `${v} ×${n}`)
      .join(', ')}; max ${max.toFixed(0)} ms`;
  });
}

/** Log queries of A's viewer over A's one source, the variants in turn, each judged as an answer that matches no event. */
export function queryAttack(url: string, world: StallWorld, name: string, connections: number, variants: Variant[]) {
  const agent = clientAgent(ADDRESS.noisy, connections);
  const byVariant = new Map<string, Outcome[]>(variants.map((v) => [v.label, []]));
  const send = (body: string, timeoutMs: number) =>
    exchange(url, '/cloud/logs/logs-insights', {
      method: 'POST',
      token: world.a.viewerToken,
      body,
      agent,
      timeoutMs,
    });
  let n = 0;
  const once = async (): Promise<Outcome> => {
    const variant = variants[n++ % variants.length]!;
    const o = judgeQuery(world, await send(variant.body, DEADLINES.query + GRACE_MS));
    byVariant.get(variant.label)!.push(o);
    return o;
  };
  const warmUp = () => warmUpEach(variants.length, (i, timeoutMs) => send(variants[i]!.body, timeoutMs));
  return loopAttack(name, connections, once, warmUp, () => (variants.length > 1 ? variantNotes(byVariant) : []));
}

function judgeQuery(world: StallWorld, r: Exchange): Outcome {
  const common = judgeCommon(r, DEADLINES.query);
  if (common !== undefined) return common;
  if (r.status !== 200) return { status: r.status, ms: r.ms, verdict: `${r.status}`, problem: `status ${r.status}` };
  const verdict = queryVerdict(r.body, 'none');
  if (verdict.kind === 'problem') return { status: 200, ms: r.ms, verdict: 'dishonest', problem: verdict.why };
  if (verdict.kind === 'partial') {
    // docs/decisions.md: a unit that failed or was stopped adds its log groups (A's one source here).
    const missed = (JSON.parse(r.body) as { missedSources: string[] }).missedSources;
    const names = [world.a.logGroup, world.a.moduleInstanceId, `${world.a.moduleInstanceId}::app`];
    if (!missed.some((m) => names.includes(m)))
      return { status: 200, ms: r.ms, verdict: 'dishonest', problem: `partial, missedSources ${missed.join(',')}` };
  }
  return { status: 200, ms: r.ms, verdict: verdict.kind };
}

/**
 * The regexes of attack 1, in turn: the issue's two, and two of the same kind with shorter repetitions that a cost
 * check may let through (then they are evaluated, and the budget must hold them off the event loop).
 */
export function attackRegexes(): Variant[] {
  return [REGEX_31, regexAlternation(), '(?:a[ab]{300}c)|(?:b[ab]{300}c)', '(?:a[ab]{100}c)|(?:b[ab]{100}c)'].map(
    (value) => ({ label: value.length > 40 ? `${value.slice(0, 30)}… (${value.length} chars)` : value, body: value }),
  );
}

/** Attack 1: the regexes over the big message, the query restricted to its stream; the variants in turn. */
export function regexQueryAttack(url: string, world: StallWorld, connections: number): Attack {
  const variants = attackRegexes().map(({ label, body: value }) => ({
    label,
    body: queryBody({ ...world.a, token: world.a.viewerToken }, queryWindow(world), {
      filter: {
        kind: 'and',
        nodes: [
          { kind: 'stream', op: 'equals', value: HUGE_STREAM },
          { kind: 'text', op: 'regex', value },
        ],
      },
    }),
  }));
  return queryAttack(url, world, 'regex over the 250 KB message (log query)', connections, variants);
}

/** A 1,024-character value with letters that fold (so case-insensitivity costs), matching no event. */
function foldingValue(i: number): string {
  let value = `Zq-NoSuchOrder-${i}-`;
  while (value.length < 1024) value += `XyZw${i}Qk`;
  return value.slice(0, 1024);
}

/** Attack 4: `or` of 60 case-insensitive 1 KB `contains` leaves that match nothing, over A's 200,000 events. */
export function caseInsensitiveAttack(url: string, world: StallWorld, connections: number): Attack {
  const filter: FilterNode = {
    kind: 'or',
    nodes: Array.from({ length: 60 }, (_, i) => ({ kind: 'text', op: 'contains', value: foldingValue(i) })),
  };
  const body = queryBody({ ...world.a, token: world.a.viewerToken }, queryWindow(world), { filter });
  return queryAttack(url, world, 'case-insensitive text, 60 × 1 KB (log query)', connections, [
    { label: 'or of 60', body },
  ]);
}

/** A password sign-in is answered within this long even when every hash slot is taken (a 429 is at once). */
const PASSWORD_DEADLINE_MS = 10_000;

/**
 * Attack 5: anonymous `POST /auth/password` of unknown emails, each connection from a client address of its own
 * (127.0.1.n), so the per-address limit does not turn them away: memory-hard hashes anyone can ask for. Honest
 * answers: 401 `auth:sign-in:failed` (the hash was computed) or 429 with Retry-After (the hash slots and their queue
 * were full, or an address or an email used its share).
 */
export function passwordFloodAttack(url: string, connections: number): Attack {
  const agents = Array.from({ length: connections }, (_, i) => clientAgent(`127.0.1.${i + 1}`, 1));
  let n = 0;
  const send = (agent: (typeof agents)[number], timeoutMs: number) =>
    exchange(url, '/auth/password', {
      method: 'POST',
      body: JSON.stringify({ email: `nobody-${(n += 1)}@flood.example`, password: 'not the password' }),
      agent,
      timeoutMs,
    });
  let next = 0;
  const once = async (): Promise<Outcome> => {
    const agent = agents[next++ % agents.length]!;
    const r = await send(agent, PASSWORD_DEADLINE_MS + GRACE_MS);
    const base = { status: r.status, ms: r.ms };
    if (r.status === 401 && errorCode(r.body) === 'auth:sign-in:failed' && errorObjectProblem(r.body) === undefined) {
      return r.ms > PASSWORD_DEADLINE_MS
        ? { ...base, verdict: 'late', problem: `401 after ${r.ms.toFixed(0)} ms` }
        : { ...base, verdict: 'sign-in-failed' };
    }
    return (
      judgeCommon(r, PASSWORD_DEADLINE_MS) ?? {
        ...base,
        verdict: String(r.status),
        problem: `${r.status} ${r.body.slice(0, 200)}`,
      }
    );
  };
  const warmUp = () => warmUpEach(1, (_i, timeoutMs) => send(agents[0]!, timeoutMs));
  return loopAttack('password sign-in flood (unknown emails)', connections, once, warmUp);
}

export function queryWindow(world: StallWorld) {
  return { startMs: world.window.startMs, endMs: Date.now() + 60_000 };
}

/** Judges a history stream that should deliver nothing (its pattern matches no event) and then end. */
function judgeFilteredStream(o: SseOutcome): Outcome {
  const ms = o.finalMs ?? o.endMs ?? o.headMs ?? 0;
  const base = { status: o.status, ms };
  if (o.status === 0) return { ...base, verdict: 'no answer', problem: `no response head (${o.error})` };
  if ((o.headMs ?? 0) > DEADLINES.streamHead)
    return { ...base, verdict: 'late', problem: `head after ${o.headMs!.toFixed(0)} ms` };
  if (o.status !== 200) {
    const common = judgeCommon(
      {
        status: o.status,
        ms: o.headMs ?? 0,
        body: o.body,
        headers: o.retryAfter === undefined ? {} : { 'retry-after': o.retryAfter },
      },
      DEADLINES.streamHead,
    );
    return common ?? { ...base, verdict: `${o.status}`, problem: `status ${o.status}` };
  }
  if (o.malformed.length > 0) return { ...base, verdict: 'malformed', problem: o.malformed[0]! };
  const wrongCodes = o.errorCodes.filter((c) => c !== TOO_COSTLY);
  if (wrongCodes.length > 0)
    return { ...base, verdict: 'error frame', problem: `event: error ${wrongCodes.join(', ')} (not ${TOO_COSTLY})` };
  if (o.events.length > 0)
    return {
      ...base,
      verdict: 'dishonest',
      problem: `${o.events.length} events, but the pattern matches no message of the stream`,
    };
  if (!o.final)
    return {
      ...base,
      verdict: 'no final',
      problem: `no final message after ${(o.endMs ?? 0).toFixed(0)} ms (${o.error ?? 'ended'})`,
    };
  if (o.finalMs! > DEADLINES.streamEnd)
    return { ...base, verdict: 'late', problem: `final message after ${o.finalMs!.toFixed(0)} ms` };
  if (o.errorCodes.length > 0 && o.messagesAfterError === 0)
    return { ...base, verdict: 'no final', problem: 'event: error not followed by the final message' };
  if (o.afterFinal > 0) return { ...base, verdict: 'after final', problem: `${o.afterFinal} messages after the final` };
  return { ...base, verdict: o.errorCodes.length > 0 ? 'too-costly' : 'final' };
}

/** The patterns of attack 2, in turn: the issue's, and one of the same kind with shorter repetitions. */
export const STREAM_PATTERNS = [STREAM_PATTERN, '%a[ab]{100}c%'];

/** Attack 2: history streams over the big message's stream with the regex patterns in turn; `connections` at a time. */
export function regexStreamAttack(url: string, world: StallWorld, connections: number): Attack {
  const agent = clientAgent(ADDRESS.noisy, connections);
  const byPattern = new Map<string, Outcome[]>(STREAM_PATTERNS.map((p) => [p, []]));
  const open = async (pattern: string, timeoutMs: number) => {
    const path = `/cloud/logs/stream?${new URLSearchParams({
      accountId: world.a.accountId,
      logGroups: world.a.logGroup,
      logStreamNames: HUGE_STREAM,
      region: REGION,
      filterPattern: pattern,
    })}`;
    const stream = openStream(url, path, { token: world.a.viewerToken, agent });
    const timer = setTimeout(() => stream.close(), timeoutMs);
    const o = await stream.ended;
    clearTimeout(timer);
    return o;
  };
  let n = 0;
  const once = async (): Promise<Outcome> => {
    const pattern = STREAM_PATTERNS[n++ % STREAM_PATTERNS.length]!;
    const o = judgeFilteredStream(await open(pattern, DEADLINES.streamEnd + GRACE_MS));
    byPattern.get(pattern)!.push(o);
    return o;
  };
  const warmUp = () => warmUpEach(STREAM_PATTERNS.length, (i, timeoutMs) => open(STREAM_PATTERNS[i]!, timeoutMs));
  return loopAttack('regex over the 250 KB message (stream)', connections, once, warmUp, () => variantNotes(byPattern));
}

/** One trickle event of the tails attack: written to `svc-k/live`, acknowledged (202) at `ackedMs`. */
interface Trickled {
  id: string;
  prefix: number;
  ackedMs: number;
}

/**
 * Attack 3: ten live tails of A's viewer, one per prefix (from the attack's start, so every trickle event is theirs to
 * deliver), while A's admin ingests a trickle into each prefix's `live` stream in turn. Each tail must open (or be
 * refused with 429 and Retry-After, then try again), deliver exactly the trickle events of its prefix, each once and
 * within DEADLINES.tailDelivery of its acknowledgement, and carry no `event: error`.
 */
export function tailsAttack(url: string, world: StallWorld, trickleEveryMs: number): Attack {
  const name = 'ten live tails, ten prefixes';
  const agent = clientAgent(ADDRESS.noisy, PREFIXES.length);
  const writer = clientAgent(ADDRESS.noisy, 1);
  const t0 = Date.now();
  const clock0 = performance.now();
  const at = () => performance.now() - clock0;
  const trickled: Trickled[] = [];
  const ingestOutcomes: Outcome[] = [];
  /** Per prefix: when each trickle id arrived (ms from clock0), and arrivals in all (duplicates count twice). */
  const arrivals = PREFIXES.map(() => new Map<string, number>());
  const duplicates = PREFIXES.map(() => 0);
  const foreign = PREFIXES.map(() => [] as string[]);
  let stopping = false;
  let trickle: Promise<void> | undefined;
  let tails: Promise<Outcome[]> | undefined;
  let stopAt = Number.POSITIVE_INFINITY;

  const writeTrickle = async () => {
    for (let n = 0; !stopping; n++) {
      const sent = performance.now();
      const prefix = n % PREFIXES.length;
      const id = `trickle-${n}`;
      const body = JSON.stringify({
        accountId: world.a.accountId,
        region: REGION,
        logGroup: world.a.logGroup,
        logStream: `${PREFIXES[prefix]}live`,
        events: [{ message: `INFO ${id} tick for the tails`, timestamp: Date.now() }],
      });
      const r = await exchange(url, '/cloud/logs/local/events', {
        method: 'POST',
        token: world.a.adminToken,
        body,
        agent: writer,
        timeoutMs: DEADLINES.ingest + GRACE_MS,
      });
      const common = judgeCommon(r, DEADLINES.ingest);
      if (common !== undefined) ingestOutcomes.push(common);
      else if (r.status === 202) {
        ingestOutcomes.push({ status: 202, ms: r.ms, verdict: 'accepted' });
        trickled.push({ id, prefix, ackedMs: at() });
      } else ingestOutcomes.push({ status: r.status, ms: r.ms, verdict: `${r.status}`, problem: r.body.slice(0, 120) });
      const rest = trickleEveryMs - (performance.now() - sent);
      if (rest > 0) await sleep(rest);
    }
  };

  /** One tail per prefix: opened (again after a 429) until it is let in, then held open until the stop. */
  const holdTail = async (prefix: number): Promise<Outcome[]> => {
    const outcomes: Outcome[] = [];
    const path = `/cloud/logs/stream?${new URLSearchParams({
      accountId: world.a.accountId,
      logGroups: world.a.logGroup,
      logStreamPrefix: PREFIXES[prefix]!,
      region: REGION,
      startTime: String(t0),
      tail: 'true',
    })}`;
    while (!stopping) {
      const stream: SseStream = openStream(url, path, {
        token: world.a.viewerToken,
        agent,
        onEvent: (e, _ms) => {
          const id = /trickle-\d+/.exec(e.message)?.[0];
          if (!e.logStreamName.startsWith(PREFIXES[prefix]!) || id === undefined) {
            foreign[prefix]!.push(`${e.logStreamName}: ${e.message.slice(0, 60)}`);
            return;
          }
          if (arrivals[prefix]!.has(id)) duplicates[prefix]! += 1;
          else arrivals[prefix]!.set(id, at());
        },
      });
      const headTimer = setTimeout(() => stream.close(), DEADLINES.streamHead + GRACE_MS);
      const head = await stream.head;
      clearTimeout(headTimer);
      if (head.status !== 200) {
        const common = judgeCommon(
          {
            status: head.status,
            ms: head.headMs ?? head.endMs ?? 0,
            body: head.body,
            error: head.error,
            headers: head.retryAfter === undefined ? {} : { 'retry-after': head.retryAfter },
          },
          DEADLINES.streamHead,
        );
        const o = common ?? { status: head.status, ms: head.headMs ?? 0, verdict: `${head.status}` };
        outcomes.push(o);
        await sleep(500);
        continue;
      }
      const openedMs = at();
      // Held open until the stop (or until the server ends it: then it is judged and opened again).
      const ended = await Promise.race([stream.ended, waitFor(() => stopping)]);
      const o = ended === undefined ? stream.close() : ended;
      const closedMs = at();
      outcomes.push(judgeTail(prefix, o, openedMs, closedMs, ended === undefined));
    }
    return outcomes;
  };

  const judgeTail = (prefix: number, o: SseOutcome, openedMs: number, closedMs: number, byClient: boolean) => {
    const base = { status: o.status, ms: o.headMs ?? 0 };
    if ((o.headMs ?? 0) > DEADLINES.streamHead)
      return { ...base, verdict: 'late', problem: `tail ${prefix}: head after ${o.headMs!.toFixed(0)} ms` };
    if (o.malformed.length > 0) return { ...base, verdict: 'malformed', problem: `tail ${prefix}: ${o.malformed[0]}` };
    if (o.errorCodes.length > 0)
      return { ...base, verdict: 'error frame', problem: `tail ${prefix}: event: error ${o.errorCodes.join(', ')}` };
    if (!byClient)
      return {
        ...base,
        verdict: 'ended',
        problem: `tail ${prefix} ended by the server after ${(closedMs - openedMs).toFixed(0)} ms (${o.final ? 'final' : o.error})`,
      };
    // Every trickle event of this prefix acknowledged while the tail was open, and long enough before the stop,
    // must have come (those written before it opened too: the tail starts at the attack's start).
    const due = trickled.filter((t) => t.prefix === prefix && t.ackedMs <= closedMs - DEADLINES.tailDelivery);
    const missing = due.filter((t) => !arrivals[prefix]!.has(t.id));
    const late = due.filter((t) => {
      const got = arrivals[prefix]!.get(t.id);
      return got !== undefined && got - Math.max(t.ackedMs, openedMs) > DEADLINES.tailDelivery;
    });
    const problems = [
      missing.length > 0 ? `${missing.length} of ${due.length} trickle events never delivered` : '',
      late.length > 0 ? `${late.length} delivered more than ${DEADLINES.tailDelivery} ms after their ingest` : '',
      duplicates[prefix]! > 0 ? `${duplicates[prefix]} delivered twice` : '',
      foreign[prefix]!.length > 0 ? `events of other streams: ${foreign[prefix]![0]}` : '',
      due.length === 0 ? 'no trickle event was due (the tail opened too late to judge)' : '',
    ].filter((p) => p !== '');
    if (problems.length > 0)
      return { ...base, verdict: 'dishonest', problem: `tail ${prefix}: ${problems.join('; ')}` };
    return { ...base, verdict: 'events' };
  };

  /** A tail and an ingest outside the ten prefixes (`warmup/`), until the tail has delivered the event. */
  const warmUp = async () => {
    const started = performance.now();
    let delivered = false;
    const tail = openStream(
      url,
      `/cloud/logs/stream?${new URLSearchParams({
        accountId: world.a.accountId,
        logGroups: world.a.logGroup,
        logStreamPrefix: 'warmup/',
        region: REGION,
        startTime: String(t0),
        tail: 'true',
      })}`,
      { token: world.a.viewerToken, agent, onEvent: () => (delivered = true) },
    );
    await Promise.race([tail.head, sleep(WARM_UP_MS)]);
    await exchange(url, '/cloud/logs/local/events', {
      method: 'POST',
      token: world.a.adminToken,
      agent: writer,
      timeoutMs: WARM_UP_MS,
      body: JSON.stringify({
        accountId: world.a.accountId,
        region: REGION,
        logGroup: world.a.logGroup,
        logStream: 'warmup/live',
        events: [{ message: 'INFO warm-up', timestamp: Date.now() }],
      }),
    });
    while (!delivered && performance.now() - started < WARM_UP_MS) await sleep(50);
    tail.close();
    return `warm-up: one tail on warmup/ and one ingest there, the event ${delivered ? 'delivered' : 'NOT delivered'}, in ${((performance.now() - started) / 1000).toFixed(1)} s (not counted)`;
  };

  return {
    name,
    warmUp,
    start() {
      trickle = writeTrickle();
      tails = Promise.all(PREFIXES.map((_, prefix) => holdTail(prefix))).then((all) => all.flat());
    },
    async stop() {
      stopAt = at();
      stopping = true;
      await trickle;
      const outcomes = [...((await tails) ?? []), ...ingestOutcomes.filter((o) => o.problem !== undefined)];
      agent.destroy();
      writer.destroy();
      const delivered = arrivals.reduce((n, m) => n + m.size, 0);
      const delays = trickled
        .flatMap((t) => {
          const got = arrivals[t.prefix]!.get(t.id);
          return got === undefined ? [] : [got - t.ackedMs];
        })
        .sort((x, y) => x - y);
      const notes = [
        `trickle: ${trickled.length} events acknowledged in ${(stopAt / 1000).toFixed(1)} s (${ingestOutcomes.length} ingest requests, ${ingestOutcomes.filter((o) => o.problem !== undefined).length} problems)`,
        `tails delivered ${delivered} distinct trickle events; delay after the ingest's 202: p50 ${percentile(delays, 0.5).toFixed(0)} ms, max ${(delays[delays.length - 1] ?? Number.NaN).toFixed(0)} ms`,
      ];
      return report(name, PREFIXES.length, outcomes, notes);
    },
  };
}

/** Resolves (undefined) once `done()` holds, checked every 100 ms. */
async function waitFor(done: () => boolean): Promise<undefined> {
  while (!done()) await sleep(100);
  return undefined;
}
