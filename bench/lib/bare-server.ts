import { fork } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';

/**
 * The floor under an authenticated read: a bare `node:http` server, in its own process, that
 * makes the same header check as Berth (one Authorization header, the Bearer syntax, the token's
 * SHA-256 compared in constant time) and answers the same status, headers and body bytes.
 */
export interface BareResponse {
  path: string;
  /** The token the Authorization header must carry; none: no header check (an unauthenticated route). */
  token?: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  /**
   * `fastify`: the same answer from a Fastify app with no plugin and no hook, and its pino logger at `info`
   * writing Fastify's two default lines per request to /dev/null: the framework's own floor, under Berth's.
   */
  framework?: 'node:http' | 'fastify';
}

export interface BareServer {
  url: string;
  close(): Promise<void>;
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,1024})[ \t]*$/i;
const SELF = fileURLToPath(import.meta.url);

export async function startBareServer(response: BareResponse): Promise<BareServer> {
  const child = fork(SELF, ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
    child.send(response);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function serve(response: BareResponse): void {
  const token = response.token;
  const expected = token === undefined ? undefined : createHash('sha256').update(token, 'utf8').digest();
  const body = Buffer.from(response.body);
  const headers = { ...response.headers, 'content-length': String(body.length) };
  const authorized = (req: IncomingMessage) => {
    if (expected === undefined) return true;
    let count = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      if (req.rawHeaders[i]!.toLowerCase() === 'authorization') count++;
    const match = count === 1 ? BEARER.exec(req.headers.authorization ?? '') : null;
    if (!match?.[1]) return false;
    return timingSafeEqual(createHash('sha256').update(match[1], 'utf8').digest(), expected);
  };
  if (response.framework === 'fastify') {
    void serveWithFastify(response, headers, body, authorized);
    return;
  }
  const server = createServer((req, res) => {
    if (req.url !== response.path || !authorized(req)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"auth:token:invalid"}');
      return;
    }
    res.writeHead(response.status, headers).end(body);
  });
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
  process.once('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections());
}

async function serveWithFastify(
  response: BareResponse,
  headers: Record<string, string>,
  body: Buffer,
  authorized: (req: IncomingMessage) => boolean,
): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: { level: 'info', stream: createWriteStream('/dev/null') } });
  const { 'content-length': _length, ...rest } = headers;
  app.get(response.path, (request, reply) => {
    if (!authorized(request.raw)) return reply.code(401).send({ code: 'auth:token:invalid' });
    return reply.code(response.status).headers(rest).send(body);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  app.server.keepAliveTimeout = 72_000;
  process.send!({ port: (app.server.address() as { port: number }).port });
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

if (process.argv.includes('--serve')) process.once('message', (m: BareResponse) => serve(m));
