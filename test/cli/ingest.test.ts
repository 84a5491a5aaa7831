import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { lineToEvent } from '../../src/cli/ingest.js';
import { runCli, startServerProcess } from '../support/process.js';
import { baseWorld, mergeWorld, TOKENS } from '../support/world.js';
import { onPostgres } from '../support/database.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-ingest-'));
  dirs.push(dir);
  const world = mergeWorld(baseWorld(), {
    cloudAccounts: [
      { id: 'local-a', organizationId: 'org-a', provider: 'local', region: 'eu-west-1' },
      { id: 'aws-a', organizationId: 'org-a', provider: 'aws', region: 'eu-west-1' },
    ],
    projects: [{ id: 'p', organizationId: 'org-a', name: 'P' }],
    environments: [{ id: 'e', projectId: 'p', name: 'prod' }],
    moduleInstances: [
      {
        id: 'mi',
        environmentId: 'e',
        name: 'svc',
        logSources: [
          { id: 'app', kind: 'ui.logs', cloudAccountId: 'local-a', region: 'eu-west-1', logGroup: 'ingested' },
        ],
      },
    ],
  });
  const fixture = join(dir, 'world.yaml');
  writeFileSync(fixture, stringify(world));
  return { dir, fixture, env: { BERTH_DATA_DIR: join(dir, 'data') } };
}

const T0 = 1_700_000_000_000;
const target = ['--account', 'local-a', '--region', 'eu-west-1', '--group', 'ingested', '--stream', 's1'];

async function queryAll(url: string) {
  const res = await fetch(`${url}/cloud/logs/logs-insights`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS.owner}`, 'content-type': 'application/json' },
    body: JSON.stringify({ startTime: 0, endTime: Date.now() + 60_000, environmentId: 'e', complete: true }),
  });
  return (await res.json()) as { rows: { message: string; timestamp: number; level: string }[] };
}

describe('lineToEvent', () => {
  it('takes {message, timestamp} lines as events and anything else as the message', () => {
    expect(lineToEvent('{"message":"hi","timestamp":5}', 'auto', 1)).toEqual({ message: 'hi', timestamp: 5 });
    expect(lineToEvent('{"level":"error","msg":"x"}', 'auto', 1)).toEqual({ message: '{"level":"error","msg":"x"}' });
    expect(lineToEvent('{not json', 'auto', 1)).toEqual({ message: '{not json' });
    expect(lineToEvent('{"message":"hi"}', 'text', 1)).toEqual({ message: '{"message":"hi"}' });
    expect(() => lineToEvent('plain', 'json', 7)).toThrow(/line 7/);
  });
});

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('berth logs ingest', () => {
  it('writes straight to the database when no server runs, and through the server when one does', async () => {
    const { dir, fixture, env } = setup();
    expect((await runCli(['seed', fixture], env)).code).toBe(0);
    const file = join(dir, 'lines.log');
    writeFileSync(
      file,
      ['ERROR first', '{"message":"second","timestamp":1700000000000}', '', '{"level":"warn","msg":"third"}'].join(
        '\n',
      ),
    );
    const direct = await runCli(['logs', 'ingest', ...target, '--format', 'auto', file], env);
    expect(direct.code, direct.stderr).toBe(0);
    expect(direct.stderr).toMatch(/ingested 3 events/);

    const server = await startServerProcess([], env);
    try {
      const refused = await runCli(['logs', 'ingest', ...target, file], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /server is running at http:\/\/127\.0\.0\.1:\d+ .*pass --token or set BERTH_TOKEN/,
      );

      const viewer = await runCli(['logs', 'ingest', ...target, '--token', TOKENS.viewer, file], env);
      expect(viewer.code).toBe(1);
      expect(viewer.stderr).toMatch(/403 auth:permission:denied/);

      const viaServer = await runCli(
        ['logs', 'ingest', ...target],
        { ...env, BERTH_TOKEN: TOKENS.owner },
        'from stdin 1\nfrom stdin 2\n',
      );
      expect(viaServer.code, viaServer.stderr).toBe(0);

      const { rows } = await queryAll(server.url);
      expect(rows.map((r) => r.message).sort()).toEqual(
        ['ERROR first', 'second', '{"level":"warn","msg":"third"}', 'from stdin 1', 'from stdin 2'].sort(),
      );
      expect(rows.find((r) => r.message === 'second')?.timestamp).toBe(1_700_000_000_000);
      expect(rows.find((r) => r.message.includes('third'))?.level).toBe('WARN');
      // Lines of one millisecond keep their order: newest first means stdin 2 before stdin 1.
      const order = rows.map((r) => r.message).filter((m) => m.startsWith('from stdin'));
      expect(order).toEqual(['from stdin 2', 'from stdin 1']);
    } finally {
      await server.stop();
    }
  }, 180_000);

  it('writes batch after batch in the file order, and stops at a bad line with the batches before it stored', async () => {
    const { dir, fixture, env } = setup();
    expect((await runCli(['seed', fixture], env)).code).toBe(0);
    const file = join(dir, 'many.log');
    // Three batches of 10,000 (the last one partial), one millisecond apart in the file's order.
    const lines = Array.from({ length: 25_000 }, (_, i) => JSON.stringify({ message: `m${i}`, timestamp: T0 + i }));
    writeFileSync(file, `${[...lines, '{oops'].join('\n')}\n`);
    const run = await runCli(['logs', 'ingest', ...target, '--format', 'json', file], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/line 25001: not valid JSON/);

    const server = await startServerProcess([], env);
    try {
      const messages: string[] = [];
      for (let endTime = T0 + 60_000; endTime > 0; ) {
        const res = await fetch(`${server.url}/cloud/logs/logs-insights`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKENS.owner}`, 'content-type': 'application/json' },
          body: JSON.stringify({ startTime: T0, endTime, environmentId: 'e', complete: true }),
        });
        const page = (await res.json()) as { rows: { message: string }[]; nextEndTimeMs: number };
        messages.push(...page.rows.map((r) => r.message));
        endTime = page.nextEndTimeMs;
      }
      // The two full batches read before the bad line are stored whole; the partial one after them is not.
      expect(messages).toEqual(Array.from({ length: 20_000 }, (_, i) => `m${19_999 - i}`));
    } finally {
      await server.stop();
    }
  }, 180_000);

  it('takes each line as the message by default, JSON lines included', () => {
    expect(lineToEvent('{"message":"hi"}', 'text', 1)).toEqual({ message: '{"message":"hi"}' });
  });

  it('refuses a non-local account with a clear message', async () => {
    const { fixture, env } = setup();
    await runCli(['seed', fixture], env);
    const run = await runCli(
      ['logs', 'ingest', '--account', 'aws-a', '--region', 'eu-west-1', '--group', 'g', '--stream', 's'],
      env,
      'x\n',
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/only be ingested into a local cloud account/);
  }, 120_000);
});
