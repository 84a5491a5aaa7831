/**
 * The attacker of the stall-connections test, run as its own process (`node --import tsx stall-flood.ts`, plan over
 * IPC) so that handling thousands of sockets never delays the test's own clock, which times the other client.
 *
 * Each slot holds one connection as a cheap attacker would: connect from its loopback address, send one keep-alive
 * `GET /healthz`, read the answer, then idle; every `refreshMs` it sends another request on the same connection
 * (keep-alive lasts 72 s, so a refresh keeps its place); when the server closes it, the slot connects again after
 * about `reconnectMs`. Loopback only, no authentication.
 */
import { connect, type Socket } from 'node:net';

export interface FloodPlan {
  url: string;
  /** Slots per address: `addresses.length × perAddress` connections wanted at once. */
  addresses: string[];
  perAddress: number;
  refreshMs: number;
  reconnectMs: number;
}

export interface FloodReport {
  /** Connections the kernel accepted (connect succeeded). */
  connected: number;
  /** Answers received, by status. */
  statuses: Record<string, number>;
  /** Connections the server closed before sending anything on them (refused as they arrived). */
  closedUnanswered: number;
  /** Connections the server closed after answering on them (an idle one closed for room, or keep-alive ended). */
  closedAfterAnswer: number;
  /** Socket errors by code (ECONNRESET when the server closed while a request was unread, …). */
  errors: Record<string, number>;
  /** Connections open and answered at once, at most and at the end. */
  maxHeld: number;
  held: number;
}

const REQUEST = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
/** Initial connections attempted at once (the kernel's accept backlog is finite). */
const CONNECT_BATCH = 256;

function checkLoopback(url: URL): void {
  if (url.hostname !== '127.0.0.1') throw new Error(`the flood only reaches 127.0.0.1, not ${url.hostname}`);
}

export async function flood(plan: FloodPlan, onReady: (report: FloodReport) => void, stop: Promise<void>) {
  const url = new URL(plan.url);
  checkLoopback(url);
  const port = Number(url.port);
  const report: FloodReport = {
    connected: 0,
    statuses: {},
    closedUnanswered: 0,
    closedAfterAnswer: 0,
    errors: {},
    maxHeld: 0,
    held: 0,
  };
  let running = true;
  /** Every socket not yet closed, connecting ones included (all destroyed at the stop). */
  const sockets = new Set<Socket>();
  /** Connected ones. */
  const open = new Set<Socket>();
  const answered = new WeakSet<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  /** One slot's connection; resolves once it was answered or closed (the first time only matters for `ready`). */
  const slot = (address: string): Promise<void> =>
    new Promise((settled) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: address });
      sockets.add(socket);
      let buffer = '';
      socket.setEncoding('utf8');
      socket.on('connect', () => {
        report.connected += 1;
        open.add(socket);
        socket.write(REQUEST);
      });
      socket.on('data', (chunk: string) => {
        buffer += chunk;
        for (;;) {
          const headEnd = buffer.indexOf('\r\n\r\n');
          if (headEnd < 0) break;
          const head = buffer.slice(0, headEnd);
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
          if (buffer.length < headEnd + 4 + length) break;
          const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 'garbled';
          report.statuses[status] = (report.statuses[status] ?? 0) + 1;
          buffer = buffer.slice(headEnd + 4 + length);
          if (!answered.has(socket)) {
            answered.add(socket);
            report.held += 1;
            report.maxHeld = Math.max(report.maxHeld, report.held);
          }
          settled();
        }
      });
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const code = error.code ?? error.message;
        report.errors[code] = (report.errors[code] ?? 0) + 1;
      });
      socket.on('close', () => {
        sockets.delete(socket);
        open.delete(socket);
        if (answered.has(socket)) {
          report.closedAfterAnswer += 1;
          report.held -= 1;
        } else report.closedUnanswered += 1;
        settled();
        if (running) later(plan.reconnectMs * (0.5 + Math.random()), () => void slot(address));
      });
    });

  const refresh = setInterval(() => {
    // Spread over half the period, as many independent clients would be.
    for (const socket of open) {
      if (!answered.has(socket)) continue;
      later(Math.random() * (plan.refreshMs / 2), () => {
        if (!socket.destroyed && socket.writable) socket.write(REQUEST);
      });
    }
  }, plan.refreshMs);

  const wanted = plan.addresses.flatMap((address) => Array.from({ length: plan.perAddress }, () => address));
  for (let i = 0; i < wanted.length; i += CONNECT_BATCH)
    await Promise.all(wanted.slice(i, i + CONNECT_BATCH).map((address) => slot(address)));
  onReady({ ...report, statuses: { ...report.statuses }, errors: { ...report.errors } });

  await stop;
  running = false;
  clearInterval(refresh);
  for (const timer of timers) clearTimeout(timer);
  const final = { ...report, statuses: { ...report.statuses }, errors: { ...report.errors } };
  for (const socket of sockets) socket.destroy();
  return final;
}

if (process.send !== undefined && process.argv[1]?.endsWith('stall-flood.ts')) {
  let stopSignal!: () => void;
  const stop = new Promise<void>((r) => (stopSignal = r));
  process.on('message', (message: { plan?: FloodPlan; stop?: boolean }) => {
    if (message.stop) stopSignal();
    if (message.plan === undefined) return;
    flood(message.plan, (report) => process.send!({ ready: report }), stop).then(
      (result) => process.send!({ result }, () => process.exit(0)),
      (error: unknown) => process.send!({ failed: (error as Error).stack ?? String(error) }, () => process.exit(1)),
    );
  });
}
