import { progress } from './runner-result.js';
import { num } from './runner-table.js';
import { RUNS, runSeconds } from './scale.js';
import { medianRun, type RunFigures } from './stats.js';

/** Something measured for `durationS` seconds: Berth under load, or a baseline. */
export interface Contender {
  label: string;
  run(durationS: number): Promise<RunFigures>;
}

/**
 * Warms every contender up, then runs them in turn, `RUNS` rounds, so that each sees the same
 * machine state (the other helpers on these two cores come and go); the median of each.
 */
export async function interleaved(bench: string, contenders: Contender[]): Promise<RunFigures[]> {
  const duration = runSeconds();
  for (const c of contenders) await c.run(Math.max(1, duration / 2));
  const runs: RunFigures[][] = contenders.map(() => []);
  for (let round = 0; round < RUNS; round++) {
    for (const [i, c] of contenders.entries()) {
      const figures = await c.run(duration);
      runs[i]!.push(figures);
      progress(bench, `${c.label}: ${num(figures.rate)}/s, p50 ${num(figures.p50)} ms, p99 ${num(figures.p99)} ms`);
    }
  }
  return runs.map(medianRun);
}
