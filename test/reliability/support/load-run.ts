import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../../support/process.js';
import type { DriverResult, LoadPlan } from './load-driver.js';

const DRIVER = fileURLToPath(new URL('./load-driver.ts', import.meta.url));

/** Runs the load driver in its own process with `plan` and returns what it measured. */
export async function runDriver(plan: LoadPlan): Promise<DriverResult> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-load-'));
  const planFile = join(dir, 'plan.json');
  writeFileSync(planFile, JSON.stringify(plan));
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', DRIVER, planFile], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    const line = stdout.trim().split('\n').at(-1) ?? '';
    if (code !== 0 || !line.startsWith('{'))
      throw new Error(`the load driver exited with ${code}:\n${stderr}\n${stdout}`);
    return JSON.parse(line) as DriverResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface LoadTotals {
  requests: number;
  rps: number;
  serverErrors: number;
  /** Connection errors including timeouts (autocannon counts a timeout as an error too). */
  errors: number;
  timeouts: number;
  tooMany: number;
  /** Responses that were neither the operation's success status nor 429 nor 5xx. */
  unexpected: number;
  badBodies: number;
}

export function summarize(run: DriverResult): LoadTotals {
  const totals: LoadTotals = {
    requests: 0,
    rps: 0,
    serverErrors: 0,
    errors: 0,
    timeouts: 0,
    tooMany: 0,
    unexpected: 0,
    badBodies: 0,
  };
  for (const op of run.operations) {
    totals.requests += op.requests;
    totals.errors += op.errors;
    totals.timeouts += op.timeouts;
    totals.badBodies += op.badBodies;
    for (const [code, n] of Object.entries(op.statusCodes)) {
      const status = Number(code);
      if (status >= 500) totals.serverErrors += n;
      else if (status === 429) totals.tooMany += n;
      else if (status !== op.expectedStatus) totals.unexpected += n;
    }
  }
  totals.rps = totals.requests / run.seconds;
  return totals;
}

/**
 * Opens `count` new connections at once (no keep-alive agent), each sending `GET /healthz`, and
 * returns how long each took to be answered, in ms (Infinity when it failed or took over 20 s).
 */
export async function timeFreshConnections(url: string, count: number): Promise<number[]> {
  const one = () =>
    new Promise<number>((resolve) => {
      const started = performance.now();
      const req = request(`${url}/healthz`, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - started : Infinity));
      });
      req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
      req.on('error', () => resolve(Infinity));
      req.end();
    });
  return Promise.all(Array.from({ length: count }, one));
}
