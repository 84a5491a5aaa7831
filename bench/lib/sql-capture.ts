import { connect, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { FrontendReader, type WireStatement } from './pg-frontend.js';

/**
 * "The same SQL through the same driver" means the statements Berth really runs, not a copy
 * written beside it that drifts when a repository changes. So the SQL is captured on the wire:
 * a TCP proxy between a Berth process and PostgreSQL records what each request sends, and the
 * baselines replay exactly that (on PostgreSQL and, the SQL being the same dialect, on PGlite).
 */
export interface SqlCapture {
  /** The database URL to give Berth: the proxy's address, the same database. */
  url: string;
  /** Records every statement from now until the returned function is called. */
  record(): () => WireStatement[];
  close(): Promise<void>;
}

export async function startSqlCapture(databaseUrl: string): Promise<SqlCapture> {
  const upstream = new URL(databaseUrl);
  let recording: WireStatement[] | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const reader = new FrontendReader((statement) => recording?.push(statement));
    const server = connect(Number(upstream.port || 5432), upstream.hostname);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      reader.push(chunk);
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('end', () => server.end());
    server.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const via = new URL(databaseUrl);
  via.hostname = '127.0.0.1';
  via.port = String((server.address() as { port: number }).port);
  return {
    url: via.toString(),
    record() {
      const statements: WireStatement[] = [];
      recording = statements;
      return () => {
        if (recording === statements) recording = undefined;
        return statements;
      };
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A parameter as the replay passes it to a driver. */
export type ReplayParam = string | boolean | null;

/** A captured statement ready to replay on either driver. */
export interface ReplayStatement {
  sql: string;
  params: ReplayParam[];
}

/**
 * Gives each captured parameter the JavaScript type the drivers expect for its SQL type. node-pg
 * sent every parameter as text, which PostgreSQL and node-pg take back as they are; PGlite
 * serialises by the parameter's type and refuses a string for a boolean, so booleans become
 * booleans again. The types come from PostgreSQL itself (`PREPARE`, `pg_prepared_statements`).
 */
export async function replayable(databaseUrl: string, statements: WireStatement[]): Promise<ReplayStatement[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const types = new Map<string, string[]>();
  try {
    let n = 0;
    for (const { sql, params } of statements) {
      if (params.length === 0 || types.has(sql)) continue;
      const name = `bench_capture_${n++}`;
      await client.query(`prepare ${name} as ${sql}`);
      const row = await client.query<{ types: string[] }>(
        'select parameter_types::text[] as types from pg_prepared_statements where name = $1',
        [name],
      );
      await client.query(`deallocate ${name}`);
      types.set(sql, row.rows[0]!.types);
    }
  } finally {
    await client.end();
  }
  return statements.map(({ sql, params }) => ({
    sql,
    params: params.map((value, i) => {
      if (Buffer.isBuffer(value)) throw new Error(`a binary parameter in a captured statement: ${sql}`);
      if (value !== null && types.get(sql)?.[i] === 'boolean') return value === 't' || value === 'true';
      return value;
    }),
  }));
}

/** Statements Berth runs for itself, not for the request (a change feed's polls, keep-alives). */
const BACKGROUND = /^\s*(listen|unlisten|select 1\b)/i;

/**
 * The statements one request runs: `send` is made `tries` times and the shortest capture kept,
 * so that a background statement landing inside one window does not count.
 */
export async function captureRequest(
  capture: SqlCapture,
  send: () => Promise<void>,
  tries = 3,
): Promise<WireStatement[]> {
  let best: WireStatement[] | undefined;
  for (let i = 0; i < tries; i++) {
    const stop = capture.record();
    await send();
    // Statements reach the proxy before their results reach Berth, so all are in by now.
    const statements = stop().filter((s) => !BACKGROUND.test(s.sql));
    if (best === undefined || statements.length < best.length) best = statements;
  }
  return best!;
}
