import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createTestDatabase, onPostgres } from '../support/database.js';
import { runCli, startServerProcess } from '../support/process.js';
import { baseWorld, TOKENS } from '../support/world.js';

const sh = promisify(execFile);
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'berth-cli-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('berth serve --demo', { timeout: 120_000 }, () => {
  it('serves the demo world, prints a token, and the printed curl commands work as printed, again after a restart', async () => {
    const dir = tempDir();
    for (const round of [1, 2]) {
      const server = await startServerProcess(['--demo'], { BERTH_DATA_DIR: dir });
      try {
        const curls = server
          .output()
          .split('\n')
          .filter((l) => l.trim().startsWith('curl '));
        expect(curls).toHaveLength(3);
        expect(server.output()).toMatch(/Demo token.*berth_demo_/);
        const results = [];
        for (const line of curls) {
          const { stdout } = await sh('sh', ['-c', line.trim()]);
          results.push(JSON.parse(stdout));
        }
        expect(results[0]).toEqual({ data: ['EMAIL_PASSWORD', 'CODE_HOST_1', 'SSO_BROKER'] });
        expect(results[1].data?.givenId, `round ${round}: ${JSON.stringify(results[1])}`).toMatch(/^databases-/);
        expect(results[2].data.map((c: { givenId: string }) => c.givenId)).toContain(results[1].data.givenId);
        // The banner's email and password sign in (EMAIL_PASSWORD is offered with --demo, and org-acme permits it).
        const signIn = /sign in as (\S+) with the password (\S+)\)/.exec(server.output());
        expect(signIn, server.output()).not.toBeNull();
        const base = /Log explorer: (\S+)\/ui\/logs/.exec(server.output())![1]!;
        const res = await fetch(`${base}/auth/password`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: signIn![1], password: signIn![2] }),
        });
        expect(res.status).toBe(204);
        const cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
        const me = await (await fetch(`${base}/me`, { headers: { cookie } })).json();
        expect(me.data.organizations.map((o: { id: string }) => o.id)).toEqual(['org-acme']);
      } finally {
        expect(await server.stop(), server.output()).toBe(0);
      }
    }
  });

  it('prints its version', async () => {
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('graceful shutdown', { timeout: 120_000 }, () => {
  it('finishes an in-flight request, closes the database and exits 0 on SIGTERM', async () => {
    const dir = tempDir();
    const server = await startServerProcess(['--demo'], { BERTH_DATA_DIR: dir });
    const events = Array.from({ length: 10_000 }, (_, i) => ({
      message: `line ${i}`,
      timestamp: 1_700_000_000_000 + i,
    }));
    const body = Buffer.from(
      JSON.stringify({
        accountId: 'acct-acme-local',
        region: 'eu-west-1',
        logGroup: 'shutdown',
        logStream: 's',
        events,
      }),
    );
    // The request is in flight for certain: its headers and half its body have reached the server when
    // SIGTERM arrives (a fixed sleep raced the connection's accept on a loaded machine).
    const req = request(`${server.url}/cloud/logs/local/events`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: 'Bearer berth_demo_try-me-locally-0123456789',
        'content-type': 'application/json',
        'content-length': body.length,
      },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
    });
    const half = Math.floor(body.length / 2);
    await new Promise<void>((resolve) => req.write(body.subarray(0, half), () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    req.end(body.subarray(half));
    const res = await answered;
    expect(res.status, res.text).toBe(202);
    expect(await server.exited, server.output()).toBe(0);
    // The data directory was closed cleanly: a new process opens it and sees the events.
    const again = await startServerProcess([], { BERTH_DATA_DIR: dir });
    try {
      const q = await fetch(`${again.url}/cloud/logs/local/events`, { method: 'POST' });
      expect(q.status).toBe(401);
    } finally {
      expect(await again.stop('SIGINT'), again.output()).toBe(0);
    }
  });
});

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('the data directory lock', { timeout: 120_000 }, () => {
  it('makes seed and migrate refuse while a server runs; token create goes through it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'world.yaml'), stringify(baseWorld()));
    expect((await runCli(['seed', join(dir, 'world.yaml')], { BERTH_DATA_DIR: dir })).code).toBe(0);
    const server = await startServerProcess([], { BERTH_DATA_DIR: dir });
    try {
      const migrate = await runCli(['migrate'], { BERTH_DATA_DIR: dir });
      expect(migrate.code).toBe(1);
      expect(migrate.stderr).toMatch(/in use by Berth process \d+ serving http/);

      const noOrganization = await runCli(['token', 'create', '--principal', 'x'], { BERTH_DATA_DIR: dir });
      expect(noOrganization.code).toBe(1);
      expect(noOrganization.stderr).toMatch(/--organization is required to create a key through the server at http/);
      const noToken = await runCli(['token', 'create', '--organization', 'org-a'], { BERTH_DATA_DIR: dir });
      expect(noToken.code).toBe(1);
      expect(noToken.stderr).toMatch(
        /server is running at http:\/\/127\.0\.0\.1:\d+ .*pass --token or set BERTH_TOKEN/,
      );

      // As the owner of org-a, through the server that holds the directory, then through --url.
      for (const extra of [[], ['--url', server.url]]) {
        const created = await runCli(['token', 'create', '--organization', 'org-a', '--name', 'ci', ...extra], {
          BERTH_DATA_DIR: extra.length ? tempDir() : dir,
          BERTH_TOKEN: TOKENS.owner,
        });
        expect(created.code, created.stderr).toBe(0);
        const me = await fetch(`${server.url}/me`, { headers: { authorization: `Bearer ${created.stdout.trim()}` } });
        expect(me.status).toBe(200);
        expect((await me.json()).data.key.organizationId).toBe('org-a');
      }
      // The API's rules hold: a viewer may not create keys.
      const viewer = await runCli(['token', 'create', '--organization', 'org-a', '--token', TOKENS.viewer], {
        BERTH_DATA_DIR: dir,
      });
      expect(viewer.code).toBe(1);
      expect(viewer.stderr).toMatch(/server answered 403/);
    } finally {
      await server.stop();
    }
  });
});

// PGlite whatever TEST_DATABASE_URL says: the PostgreSQL run (CI runs both) skips it rather than run it twice.
describe.skipIf(onPostgres)('berth seed and token', { timeout: 180_000 }, () => {
  it('seeds a file, creates a working token, and revokes it', async () => {
    const dir = tempDir();
    const file = join(dir, 'world.yaml');
    writeFileSync(file, stringify(baseWorld()));
    const env = { BERTH_DATA_DIR: join(dir, 'data') };
    expect((await runCli(['seed', file], env)).code).toBe(0);
    const again = await runCli(['seed', file], env);
    expect(again.code).toBe(0);
    const created = await runCli(['token', 'create', '--principal', 'p-admin', '--organization', 'org-a'], env);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^berth_key[0-9a-f]+_[A-Za-z0-9_-]+$/);
    expect(created.stderr).not.toContain(token);

    const server = await startServerProcess([], env);
    try {
      const ok = await fetch(`${server.url}/organizations/org-a/permitted-identity-providers`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(ok.status).toBe(200);
      expect(server.output()).not.toContain(token);
      expect(server.output()).not.toContain(TOKENS.owner);
    } finally {
      await server.stop();
    }
    const keyId = /^berth_(key[0-9a-f]+)_/.exec(token)![1]!;
    expect((await runCli(['token', 'revoke', keyId], env)).code).toBe(0);
    const server2 = await startServerProcess([], env);
    try {
      const denied = await fetch(`${server2.url}/organizations/org-a/permitted-identity-providers`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(denied.status).toBe(401);
    } finally {
      await server2.stop();
    }
  });

  it('sets a password from standard input, and ends the sessions signed in with the old one', async () => {
    const dir = tempDir();
    const file = join(dir, 'world.yaml');
    const world = baseWorld() as { principals: Record<string, unknown>[] };
    world.principals.find((p) => p.id === 'p-admin')!.email = 'admin@a.example';
    writeFileSync(file, stringify(world));
    const signInFile = join(dir, 'sign-in.yaml');
    writeFileSync(signInFile, 'passwordSignIn: true\n');
    const env = { BERTH_DATA_DIR: join(dir, 'data'), SIGN_IN_CONFIG: signInFile };
    expect((await runCli(['seed', file], env)).code).toBe(0);
    const short = await runCli(['user', 'set-password', '--email', 'admin@a.example'], env, 'short\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/at least 12 characters/);
    const set = await runCli(['user', 'set-password', '--email', 'ADMIN@a.example'], env, 'first password 0001\n');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/password set for p-admin/);

    const signIn = (url: string, password: string) =>
      fetch(`${url}/auth/password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@a.example', password }),
      });
    let server = await startServerProcess([], env);
    let cookie: string;
    try {
      const res = await signIn(server.url, 'first password 0001');
      expect(res.status).toBe(204);
      cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
      expect((await fetch(`${server.url}/me`, { headers: { cookie } })).status).toBe(200);
      expect(server.output()).not.toContain('first password');
    } finally {
      await server.stop();
    }
    const reset = await runCli(['user', 'set-password', '--principal', 'p-admin'], env, 'second password 0002\n');
    expect(reset.stdout).toMatch(/1 password session\(s\) ended/);
    server = await startServerProcess([], env);
    try {
      expect((await fetch(`${server.url}/me`, { headers: { cookie } })).status).toBe(401);
      expect((await signIn(server.url, 'first password 0001')).status).toBe(401);
      expect((await signIn(server.url, 'second password 0002')).status).toBe(204);
    } finally {
      await server.stop();
    }
  });

  it('stops with a message naming the entry of a bad SIGN_IN_CONFIG', async () => {
    const dir = tempDir();
    const signInFile = join(dir, 'sign-in.yaml');
    writeFileSync(
      signInFile,
      'providers:\n  - provider: SOCIAL_1\n    issuer: http://idp.example.com\n    clientId: c\n    clientSecret: s\n',
    );
    const run = await runCli(['serve'], { BERTH_DATA_DIR: join(dir, 'data'), SIGN_IN_CONFIG: signInFile, PORT: '0' });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/providers\[0\]\.issuer: must be https/);
  });

  it('refuses a bad fixture with the path of the fault and exit code 1', async () => {
    const dir = tempDir();
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ environments: [{ id: 'e', projectId: 'nope', name: 'x' }] }));
    const run = await runCli(['seed', file], { BERTH_DATA_DIR: join(dir, 'data') });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/environments\[0\]\.projectId/);
  });

  it('stops with a message naming a bad configuration variable', async () => {
    const run = await runCli(['migrate'], { PORT: 'eighty', BERTH_DATA_DIR: tempDir() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/PORT/);
  });
});

describe.runIf(onPostgres)('two replicas on one PostgreSQL', { timeout: 180_000 }, () => {
  it('answer exactly one 201 and one 409 for the same givenId sent at once', async () => {
    const db = await createTestDatabase();
    const dir = tempDir();
    const file = join(dir, 'world.yaml');
    writeFileSync(file, stringify(baseWorld()));
    const env = { DATABASE_URL: db.url! };
    expect((await runCli(['seed', file], env)).code).toBe(0);
    const [a, b] = await Promise.all([startServerProcess([], env), startServerProcess([], env)]);
    try {
      for (let round = 0; round < 5; round++) {
        const send = (url: string) =>
          fetch(`${url}/module-categories`, {
            method: 'POST',
            headers: { authorization: `Bearer ${TOKENS.owner}`, 'content-type': 'application/json' },
            body: JSON.stringify({ data: { givenId: `raced-${round}`, name: 'Raced', sortOrder: 1 } }),
          }).then((r) => r.status);
        const statuses = await Promise.all([send(a.url), send(b.url)]);
        expect(statuses.sort()).toEqual([201, 409]);
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await db.drop();
    }
  });
});
