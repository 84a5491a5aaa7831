// The README's Tour, run as a reader runs it: every ```sh block under "## Tour" goes to bash against a real
// `berth serve --demo` on a fresh data directory, with the BERTH and TOKEN variables the Tour tells the reader to
// set; then the server restarts on the same directory and every example runs again (no 409 on a second run).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startServerProcess, type ServerProcess } from '../support/process.js';
import { onPostgres } from '../support/database.js';

/** What the Tour must show: the seven operations, log ingest and key management, each by the path it calls. */
const REQUIRED: [string, RegExp][] = [
  ['identity providers', /\/organizations\/[^/\s"]+\/permitted-identity-providers/],
  ['log query', /\/cloud\/logs\/logs-insights(?!\/)/],
  ['module categories', /\/module-categories/],
  ['log stream', /\/cloud\/logs\/stream/],
  ['certificate retry', /\/managed-certificates\/[^/\s"]+\/retry-validation/],
  ['name availability', /\/domains\/name-availability/],
  ['domain list', /\/domains\?/],
  ['log ingest', /\/cloud\/logs\/local\/events/],
  ['API keys', /\/organizations\/[^/\s"]+\/api-keys/],
];

interface Tour {
  /** The `export BERTH=… TOKEN=…` block the reader runs first. */
  setup: Record<string, string>;
  examples: string[];
}

/** The fenced ```sh blocks between "## Tour" and the next level-2 heading. */
function readTour(markdown: string): Tour {
  const start = markdown.search(/^## Tour\s*$/m);
  if (start < 0) throw new Error('README.md has no "## Tour" heading');
  const rest = markdown.slice(start + '## Tour'.length);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```\s*$/gm)].map((m) => m[1]!);
  const isSetup = (block: string) =>
    block
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .every((l) => /^export [A-Z_]+=/.test(l));
  const setupBlock = blocks.find(isSetup);
  const setup: Record<string, string> = {};
  for (const m of (setupBlock ?? '').matchAll(/^export ([A-Z_]+)=(\S+)/gm)) setup[m[1]!] = m[2]!;
  return { setup, examples: blocks.filter((b) => !isSetup(b)) };
}

/** Every JSON object or array in `text`, whether one body, several bodies run together, or SSE `data:` lines. */
function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    const open = text.slice(i).search(/[[{]/);
    if (open < 0) break;
    const from = i + open;
    let depth = 0;
    let inString = false;
    let to = -1;
    for (let j = from; j < text.length; j++) {
      const c = text[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) {
          to = j + 1;
          break;
        }
      }
    }
    if (to < 0) break;
    try {
      values.push(JSON.parse(text.slice(from, to)));
      i = to;
    } catch {
      i = from + 1;
    }
  }
  return values;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Berth's error object: what no example may print. */
const isError = (v: unknown) => isObject(v) && typeof v.code === 'string' && typeof v.message === 'string';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** One example under bash, as strict as a script can be: any failing command or HTTP status ≥ 400 fails it. */
function runExample(example: string, env: Record<string, string>): Promise<Run> {
  const script = [
    'set -euo pipefail',
    // Every curl of the example fails on an HTTP error, printing the error object it got.
    'curl() { command curl --fail-with-body --show-error --max-time 30 "$@"; }',
    example,
  ].join('\n');
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', script],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const tour = readTour(README);

describe('the README Tour', () => {
  it('has at least nine examples, covering the seven operations, log ingest and API keys', () => {
    expect(tour.examples.length).toBeGreaterThanOrEqual(9);
    const missing = REQUIRED.filter(([, path]) => !tour.examples.some((e) => path.test(e))).map(([name]) => name);
    expect(missing).toEqual([]);
  });

  it('tells the reader to set BERTH to the default address and TOKEN to a token', () => {
    expect(tour.setup.BERTH).toBe('http://localhost:8080');
    expect(tour.setup.TOKEN).toMatch(/^berth_/);
    for (const example of tour.examples) expect(example).not.toMatch(/localhost:8080|berth_demo/);
  });
});

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('the README Tour against berth serve --demo', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-tour-'));
  let server: ServerProcess | undefined;

  const start = async () => {
    server = await startServerProcess(['--demo'], { BERTH_DATA_DIR: dir, DATABASE_URL: '' });
    const token = /Demo token[^:\n]*:\s*(berth_\S+)/.exec(server.output())?.[1];
    expect(token, server.output()).toBeDefined();
    return { server, token: token! };
  };

  /** Runs every example in order against the server; each must exit 0 and print a JSON answer, no error object. */
  const runTour = async (url: string, token: string) => {
    const env = {
      BERTH: url,
      TOKEN: token,
      // The key-management example reads JSON with `node`, which a reader of this README has.
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    };
    for (const example of tour.examples) {
      const run = await runExample(example, env);
      const shown = `example:\n${example}\nexit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
      expect(run.code, shown).toBe(0);
      const values = jsonValues(run.stdout);
      expect(values.filter(isError), shown).toEqual([]);
      expect(
        values.some((v) => isObject(v) && ('data' in v || 'rows' in v || 'events' in v)),
        shown,
      ).toBe(true);
    }
  };

  beforeAll(() => {
    expect(tour.examples.length).toBeGreaterThan(0);
  });

  afterAll(async () => {
    if (server !== undefined) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs every example with the demo token the banner prints, and the README names that token', async () => {
    const first = await start();
    expect(first.token).toBe(tour.setup.TOKEN);
    await runTour(first.server.url, first.token);
  });

  it('runs every example again after a restart on the same data directory', async () => {
    expect(await server!.stop(), server!.output()).toBe(0);
    server = undefined;
    const again = await start();
    await runTour(again.server.url, again.token);
  });
});
