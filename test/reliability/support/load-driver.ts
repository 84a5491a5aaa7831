/**
 * The load generator, run as its own process (`node --import tsx load-driver.ts PLAN.json`) so the
 * client's work never shares an event loop with the test or with Berth. It runs one autocannon
 * instance per operation of the mix, all at once, for the plan's duration, over loopback only, and
 * prints one JSON line: per operation the requests, status codes, connection errors and timeouts,
 * bodies that failed their check, and the 2xx latency percentiles.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { OPERATIONS, type LoadContext, type LoadOperation } from './load-mix.js';
import type { LoadTenant } from './load-world.js';

export interface LoadPlan {
  url: string;
  seconds: number;
  /** Connections per operation name; operations not listed do not run. */
  connections: Record<string, number>;
  tenants: LoadTenant[];
  context: LoadContext;
  /** autocannon's per-request timeout. */
  timeoutSeconds: number;
}

export interface OperationResult {
  name: string;
  connections: number;
  requests: number;
  expectedStatus: number;
  ok: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Successful responses whose body failed the operation's check. */
  badBodies: number;
  /** First few unexpected responses (status and body start) and bad bodies, for the report. */
  samples: string[];
  p50: number;
  p99: number;
  max: number;
}

export interface DriverResult {
  seconds: number;
  operations: OperationResult[];
}

async function runOperation(op: LoadOperation, connections: number, plan: LoadPlan): Promise<OperationResult> {
  const url = new URL(plan.url);
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost')
    throw new Error(`the load driver only targets loopback, not ${url.hostname}`);
  let seq = 0;
  let ok = 0;
  let badBodies = 0;
  const samples: string[] = [];
  const note = (text: string) => {
    if (samples.length < 5) samples.push(text.slice(0, 600));
  };
  const result = await autocannon({
    url: plan.url,
    connections,
    duration: plan.seconds,
    timeout: op.timeoutSeconds ?? plan.timeoutSeconds,
    ...(op.rate === undefined ? {} : { overallRate: op.rate }),
    requests: [
      {
        setupRequest: (req) => {
          seq += 1;
          const r = op.build(plan.tenants[Math.floor(Math.random() * plan.tenants.length)]!, seq, plan.context);
          const headers: Record<string, string> = {};
          if (r.token !== undefined) headers.authorization = `Bearer ${r.token}`;
          if (r.body !== undefined) headers['content-type'] = 'application/json';
          return {
            ...req,
            method: r.method,
            path: r.path,
            headers,
            body: r.body === undefined ? undefined : JSON.stringify(r.body),
          } as typeof req;
        },
        onResponse: (status, body) => {
          if (status !== op.status) {
            if (status !== 429) note(`${status} ${body}`);
            return;
          }
          ok += 1;
          const problem = op.check?.(body);
          if (problem !== undefined) {
            badBodies += 1;
            note(`${status} ${problem}: ${body}`);
          }
        },
      },
    ],
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = count ?? 0;
  return {
    name: op.name,
    connections,
    requests: Object.values(statusCodes).reduce((a, b) => a + b, 0),
    expectedStatus: op.status,
    ok,
    statusCodes,
    errors: result.errors,
    timeouts: result.timeouts,
    badBodies,
    samples,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
  };
}

export async function drive(plan: LoadPlan): Promise<DriverResult> {
  const started = Date.now();
  const operations = await Promise.all(
    OPERATIONS.filter((op) => (plan.connections[op.name] ?? 0) > 0).map((op) =>
      runOperation(op, plan.connections[op.name]!, plan),
    ),
  );
  return { seconds: (Date.now() - started) / 1000, operations };
}

const planFile = process.argv[2];
if (planFile !== undefined) {
  const plan = JSON.parse(readFileSync(planFile, 'utf8')) as LoadPlan;
  drive(plan).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (error: unknown) => {
      process.stderr.write(`load driver failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
