// What the fuzz tests share: the seed, the run sizes, sending one request on its own connection and
// judging the answer, and the tally that goes into the summary table.
import fc from 'fast-check';
import { FULL, recordSummary } from './summary.js';
import type { FuzzRequest } from './fuzz-request.js';
import { describeResponse, exchange, responseProblems, type Exchange } from './fuzz-wire.js';

/** Fixed by default (so a run is reproducible), printed, and replaced by FUZZ_SEED to replay or explore. */
export const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : 909_2026;

/**
 * Requests per file. FULL: at least 10,000 in total across fuzz.test.ts and fuzz-raw.test.ts (each
 * file asserts its own share); inside `npm test` a fast subset that still covers every route.
 */
export const HTTP_REQUESTS = FULL ? 8_000 : 330;
export const RAW_REQUESTS = FULL ? 2_500 : 150;

/** FUZZ_KEEP_GOING=1: do not stop (and shrink) at the first failure; list every distinct problem at the end instead. */
export const KEEP_GOING = process.env.FUZZ_KEEP_GOING === '1';

export class Tally {
  requests = 0;
  fiveXx = 0;
  nonConforming = 0;
  unanswered = 0;
  readonly statuses = new Map<number, number>();
  /** Statuses per route (or kind of request), to show that the requests reach deep validation. */
  readonly byLabel = new Map<string, Map<number, number>>();
  readonly failures: string[] = [];

  note(ex: Exchange, problems: string[], label = 'other'): void {
    this.requests += 1;
    const mine = this.byLabel.get(label) ?? new Map<number, number>();
    this.byLabel.set(label, mine);
    for (const r of ex.responses) {
      this.statuses.set(r.status, (this.statuses.get(r.status) ?? 0) + 1);
      mine.set(r.status, (mine.get(r.status) ?? 0) + 1);
    }
    if (ex.responses.some((r) => r.status >= 500)) this.fiveXx += 1;
    if (problems.some((p) => !p.startsWith('status 5') && !p.startsWith('no answer'))) this.nonConforming += 1;
    if (problems.some((p) => p.startsWith('no answer'))) this.unanswered += 1;
  }

  statusLine(statuses = this.statuses): string {
    return [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
  }

  report(): string {
    return [...this.byLabel].map(([label, statuses]) => `  ${label}: ${this.statusLine(statuses)}`).join('\n');
  }

  /** The figures of one file for the summary table. */
  record(area: string, kind: string, alive: boolean, planned: number): void {
    const fmt = (n: number) => n.toLocaleString('en-US');
    recordSummary({
      area,
      check: `${kind} requests fuzzed`,
      result: `${fmt(this.requests)} (planned ≥ ${fmt(planned)}; statuses ${this.statusLine()})`,
      ok: this.requests >= planned,
    });
    recordSummary({ area, check: `${kind}: 5xx answers`, result: String(this.fiveXx), ok: this.fiveXx === 0 });
    recordSummary({
      area,
      check: `${kind}: non-conforming error bodies`,
      result: String(this.nonConforming),
      ok: this.nonConforming === 0,
    });
    recordSummary({
      area,
      check: `${kind}: complete requests left unanswered`,
      result: String(this.unanswered),
      ok: this.unanswered === 0,
    });
    recordSummary({
      area,
      check: `${kind}: process alive and /healthz 200 afterwards`,
      result: alive ? 'yes' : 'no',
      ok: alive,
    });
  }
}

/**
 * Sends a complete, well-framed request on a new connection; answers what is wrong with the exchange:
 * no answer at all, a 5xx, an error body that is not exactly the error object.
 */
export async function sendChecked(port: number, request: FuzzRequest, tally: Tally, label?: string): Promise<string[]> {
  const started = Date.now();
  const ex = await exchange(port, request.bytes(port), { methods: [request.method], streamCutMs: 500 });
  const problems = exchangeProblems(ex, [request.method], true);
  if (problems.length > 0) problems[0] += ` (after ${Date.now() - started} ms)`;
  tally.note(ex, problems, label);
  return problems;
}

/** `complete`: the request was well-framed, so closing without any answer is a failure. */
export function exchangeProblems(ex: Exchange, methods: string[], complete: boolean): string[] {
  const problems: string[] = [];
  if (ex.responses.length === 0 && complete) {
    problems.push(
      `no answer (${ex.timedOut ? 'timed out' : 'connection closed'}${ex.trailing.length > 0 ? `; got ${JSON.stringify(ex.trailing.toString('latin1').slice(0, 200))}` : ''})`,
    );
  }
  if (ex.responses.length === 0 && !complete && ex.trailing.length > 0) {
    problems.push(`unparseable answer ${JSON.stringify(ex.trailing.toString('latin1').slice(0, 300))}`);
  }
  ex.responses.forEach((res, i) => {
    const found = responseProblems(res, methods[i] ?? 'GET');
    if (found.length > 0) problems.push(`${found.join('; ')} — in ${describeResponse(res)}`);
  });
  return problems;
}

/**
 * Runs a fast-check property over `arb`: every value is sent by `send`, which answers its problems.
 * Stops at the first failing value and shrinks it (the failure message shows the shrunk request), or
 * with FUZZ_KEEP_GOING collects every failure into `tally.failures`.
 */
export async function fuzz<T>(
  arb: fc.Arbitrary<T>,
  numRuns: number,
  tally: Tally,
  send: (value: T) => Promise<string[]>,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(arb, async (value) => {
      const problems = await send(value);
      if (problems.length === 0) return;
      if (KEEP_GOING) {
        tally.failures.push(`${problems.join('\n')}\n  request: ${String(value)}`);
        return;
      }
      throw new Error(problems.join('\n'));
    }),
    {
      seed: SEED,
      numRuns,
      endOnFailure: false,
      markInterruptAsFailure: true,
      interruptAfterTimeLimit: FULL ? 1_200_000 : 120_000,
    },
  );
}
