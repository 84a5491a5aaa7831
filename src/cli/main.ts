import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { FixtureError, loadFixture, readFixtureFile } from '../fixtures/load.js';
import { generateDemoLogEvents } from '../fixtures/demo-logs.js';
import { openConfiguredStore } from '../runtime.js';
import { DataDirLocked } from '../store/data-dir-lock.js';
import { startServer } from '../server.js';
import { createToken, createTokenThroughServer, revokeToken, type TokenCreateOptions } from './tokens.js';
import { serverTarget } from './server-client.js';
import { ingestCommand } from './ingest.js';
import { readFirstLine, setPassword } from './users.js';
import { loadSignInSettings } from '../sign-in-config.js';
import { CliError } from './cli-error.js';

export const DEMO_FIXTURE = fileURLToPath(new URL('../../fixtures/demo.yaml', import.meta.url));
export const DEMO_TOKEN = 'berth_demo_try-me-locally-0123456789';
/** The demo owner's sign-in (fixtures/demo.yaml). */
export const DEMO_EMAIL = 'ada@acme.example';
export const DEMO_PASSWORD = 'berth-demo-password';

/** The package's version (src/cli and dist/cli both sit two levels below package.json). */
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Errors a user can act on are printed as one message; anything else with its stack. */
function fail(error: unknown): never {
  if (
    error instanceof ConfigError ||
    error instanceof FixtureError ||
    error instanceof DataDirLocked ||
    error instanceof CliError
  ) {
    const hint =
      error instanceof DataDirLocked
        ? '\nStop the server first, or point this command at it (see `berth --help`).'
        : '';
    process.stderr.write(`berth: ${error.message}${hint}\n`);
  } else {
    process.stderr.write(`berth: ${(error as Error)?.stack ?? String(error)}\n`);
  }
  process.exit(1);
}

const config = (): Config => loadConfig(process.env);

async function withStore<T>(fn: (opened: Awaited<ReturnType<typeof openConfiguredStore>>) => Promise<T>): Promise<T> {
  const opened = await openConfiguredStore(config());
  try {
    return await fn(opened);
  } finally {
    await opened.close();
  }
}

function demoBanner(base: string): string {
  const auth = `-H 'Authorization: Bearer ${DEMO_TOKEN}'`;
  // A new id at every start: the create below answers 201 again after a restart, not 409.
  const givenId = `databases-${Date.now().toString(36)}`;
  return [
    '',
    `Berth is serving the demo organization at ${base}`,
    `Demo token (owner of org-acme): ${DEMO_TOKEN}`,
    `Log explorer: ${base}/ui/logs  (sign in as ${DEMO_EMAIL} with the password ${DEMO_PASSWORD})`,
    '',
    'Try:',
    `  curl -s ${auth} ${base}/organizations/org-acme/permitted-identity-providers`,
    `  curl -s ${auth} -H 'Content-Type: application/json' -d '{"data":{"givenId":"${givenId}","name":"Databases","sortOrder":10}}' ${base}/module-categories`,
    `  curl -s ${auth} ${base}/module-categories`,
    '',
    `API description: ${base}/openapi.json`,
    '',
  ].join('\n');
}

export function buildCli(): Command {
  const program = new Command('berth')
    .description('Berth control-plane API')
    .version(PACKAGE_VERSION, '-V, --version', 'print the version of Berth')
    .showHelpAfterError();

  program
    .command('serve')
    .description('start the HTTP server (migrates first)')
    .option('--demo', 'load fixtures/demo.yaml and recent demo log events, print a token to try')
    .option('--memory', 'keep the embedded database in memory (nothing survives a restart)')
    .action(async (opts: { demo?: boolean; memory?: boolean }) => {
      const cfg = config();
      // A bad SIGN_IN_CONFIG stops the process here, before the database opens, with a message naming the entry.
      const signIn = loadSignInSettings(cfg, { demo: opts.demo === true });
      const server = await startServer(cfg, {
        signIn,
        memory: opts.memory,
        installSignalHandlers: true,
        prepare: opts.demo
          ? async ({ store }) => {
              await loadFixture(store.db, readFixtureFile(DEMO_FIXTURE));
              await generateDemoLogEvents(store.db);
            }
          : undefined,
      });
      if (opts.demo) process.stdout.write(demoBanner(server.services.signIn.publicUrl));
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(async () => {
      await withStore(async () => {
        process.stdout.write('migrations applied\n');
      });
    });

  program
    .command('seed')
    .argument('<file>', 'fixture file (YAML or JSON)')
    .description('load a fixture idempotently, in one transaction')
    .action(async (file: string) => {
      const fixture = readFixtureFile(file);
      await withStore(async ({ store }) => {
        const result = await loadFixture(store.db, fixture);
        const summary = Object.entries(result.counts)
          .filter(([, n]) => n > 0)
          .map(([t, n]) => `${t}=${n}`)
          .join(' ');
        process.stdout.write(`seeded ${file}: ${summary || 'nothing'} (new log events: ${result.logEventsInserted})\n`);
      });
    });

  const token = program.command('token').description('manage API keys');
  token
    .command('create')
    .description(
      'create an API key and print its token once: through the server given by --url or holding the data directory ' +
        '(as the caller of --token), else straight in the database (the operator: any principal)',
    )
    .option('--principal <id>', 'principal the key acts as (through a server: default the caller)')
    .option('--organization <id>', 'scope the key to one organization (required through a server)')
    .option('--name <name>', 'a label for people (through a server)')
    .option('--expires-in-days <n>', 'expire after N days', (v) => Number.parseInt(v, 10))
    .option('--url <url>', 'server to create it through (default: the one holding the data directory)')
    .option('--token <token>', 'bearer token for the server (default: $BERTH_TOKEN)')
    .action(async (opts: TokenCreateOptions) => {
      const server = serverTarget(config(), opts.url);
      const created =
        server === undefined
          ? await withStore(({ store }) => {
              if (opts.principal === undefined) throw new CliError('--principal is required without a server');
              return createToken(store.db, { ...opts, principal: opts.principal });
            })
          : await createTokenThroughServer(server, opts);
      process.stdout.write(`${created.token}\n`);
      process.stderr.write(`key ${created.keyId} created; the token is not stored and cannot be shown again\n`);
    });
  token
    .command('revoke')
    .argument('<keyId>', 'the key to revoke')
    .description('revoke an API key')
    .action(async (keyId: string) => {
      await withStore(async ({ store }) => {
        await revokeToken(store.db, keyId);
        process.stdout.write(`key ${keyId} revoked\n`);
      });
    });

  const user = program.command('user').description('manage how principals sign in');
  user
    .command('set-password')
    .description(
      'set the password a principal signs in with (EMAIL_PASSWORD), read from the first line of standard input; ' +
        'ends its password sessions',
    )
    .option('--principal <id>', 'the principal')
    .option('--email <email>', 'the principal with this email')
    .action(async (opts: { principal?: string; email?: string }) => {
      const password = await readFirstLine();
      await withStore(async ({ store }) => {
        const result = await setPassword(store.db, opts, password);
        process.stdout.write(
          `password set for ${result.principalId}; ${result.sessionsEnded} password session(s) ended\n`,
        );
      });
    });

  const logs = program.command('logs').description('log events of local cloud accounts');
  logs
    .command('ingest')
    .description('write lines of FILE (or stdin) as events, through the running server when there is one')
    .argument('[file]', 'input file; - or absent for stdin')
    .requiredOption('--account <id>', 'local cloud account id')
    .requiredOption('--region <region>', 'region')
    .requiredOption('--group <name>', 'log group')
    .requiredOption('--stream <name>', 'log stream')
    .addOption(
      new Option(
        '--format <format>',
        'text: each line is a message; json: each line is {"message", "timestamp"?}; auto: json lines of that form, else text',
      )
        .choices(['auto', 'text', 'json'])
        .default('text'),
    )
    .option('--url <url>', 'server to send to (default: the one holding the data directory)')
    .option('--token <token>', 'bearer token for the server (default: $BERTH_TOKEN)')
    .option('--no-progress', 'no progress bar')
    .action(async (file: string | undefined, opts) => {
      await ingestCommand(config(), file, opts);
    });

  return program;
}

const invokedDirectly = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (invokedDirectly) {
  buildCli().parseAsync(process.argv).catch(fail);
}

export async function runCli(argv: string[]): Promise<void> {
  await buildCli().parseAsync(argv).catch(fail);
}
