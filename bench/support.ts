import { performance } from 'node:perf_hooks';

export interface Timing {
  name: string;
  medianMs: number;
  p95Ms: number;
  runs: number;
}

/** Runs `fn` `warmup` times untimed, then `runs` times; median and p95 in ms. */
export async function time(name: string, fn: () => Promise<unknown>, runs = 15, warmup = 3): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { name, medianMs: at(0.5), p95Ms: at(0.95), runs };
}

export function report(title: string, rows: Timing[], baseline?: Timing): void {
  console.log(`\n## ${title}`);
  for (const r of rows) {
    const ratio =
      baseline && r !== baseline
        ? `  ×${(r.medianMs / baseline.medianMs).toFixed(2)} of baseline`
        : r === baseline
          ? '  (baseline)'
          : '';
    console.log(
      `  ${r.name.padEnd(58)} median ${r.medianMs.toFixed(1).padStart(8)} ms   p95 ${r.p95Ms.toFixed(1).padStart(8)} ms${ratio}`,
    );
  }
}
